/** @jsxImportSource preact */
/**
 * One message: summary, actions, the HTML in a sandboxed frame (its own response, see
 * routes/messages.tsx), the text part, attachments and every header. All of it is text
 * to the renderer; the message's HTML never enters this page's markup.
 */
import type { Membership } from '../../core/organizations/organizations.ts'
import type { Message } from '../../core/models.ts'
import { type LinkStatus, MAX_CHECKED } from '../../core/messages/link-check.ts'
import { type FoundCode, type FoundLink, MESSAGE_HTML_SANDBOX, splitLinks } from '../message-links.ts'
import { PATHS, withQuery } from '../paths.ts'
import { decodeHeaderText } from '../../core/inbound/mime/encoded-words.ts'
import { formatBytes } from './inboxes.tsx'
import { PostForm, Table, Time } from './shell.tsx'

/** Raster images only get a thumbnail (an SVG would be drawn by the console page's own renderer). */
const THUMBNAIL_TYPES = /^image\/(png|jpeg|gif|webp|avif)$/i

/** A text part longer than this is not put in the page: it is framed, loaded when its section is opened. */
export const MAX_TEXT_INLINE = 64 * 1024

export type PreviewWidth = 'phone' | 'tablet' | 'desktop'
export const PREVIEW_WIDTHS: { id: PreviewWidth; label: string; detail: string }[] = [
  { id: 'phone', label: 'Phone', detail: '375 px' },
  { id: 'tablet', label: 'Tablet', detail: '768 px' },
  { id: 'desktop', label: 'Desktop', detail: 'full width' },
]

export function MessagePage(props: {
  org: Membership
  message: Message
  remoteImages: boolean
  width: PreviewWidth
  links: FoundLink[]
  codes: FoundCode[]
  newer?: string
  older?: string
  linkCheck: boolean
  /** A spam filter is configured (CONSOLE_SPAM_CHECK): the summary links to the check. */
  spamCheck: boolean
  statuses?: Map<string, LinkStatus>
  /** For a message with HTML and no text part: its HTML's text, shown marked as derived. */
  derivedText?: string
}) {
  const { org, message } = props
  const here = PATHS.message.link(org.organizationId, message.id)
  // The page's own URL with its view choices (remote images, preview width); each link changes one.
  const view = (images: boolean, width: PreviewWidth) => {
    const query = new URLSearchParams()
    if (images) query.set('images', 'remote')
    if (width !== 'desktop') query.set('width', width)
    const text = query.toString()
    return text ? `${here}?${text}` : here
  }
  const attachments = message.attachments.length
  const largeText = message.text !== null && message.text.length > MAX_TEXT_INLINE
  return (
    <>
      <nav class="message-nav" aria-label="Messages">
        <a href={PATHS.inbox.link(org.organizationId, message.inbox_id)} id="back-to-inbox">
          ← {message.to}
        </a>
        {props.newer && (
          <a href={PATHS.message.link(org.organizationId, props.newer)} id="newer-message" rel="prev">
            Newer
          </a>
        )}
        {props.older && (
          <a href={PATHS.message.link(org.organizationId, props.older)} id="older-message" rel="next">
            Older
          </a>
        )}
      </nav>
      {/* The summary is kept to a few lines so the email itself starts inside the first screen, phones included. */}
      <section class="card message-head">
        <h2 class="page-title" id="message-subject">
          {message.subject || '(no subject)'}
        </h2>
        <dl class="message-meta">
          <div>
            <dt>From</dt>
            <dd id="message-from">{message.from.name ? `${message.from.name} <${message.from.address}>` : message.from.address}</dd>
          </div>
          <div>
            <dt>To</dt>
            <dd>{message.to}</dd>
          </div>
          <div>
            <dt>Received</dt>
            <dd>
              <Time at={message.received_at} />
            </dd>
          </div>
          <div>
            <dt>Size</dt>
            <dd>
              {formatBytes(message.size_bytes)}
              {attachments > 0 && (
                <>
                  {' · '}
                  <a href="#view-attachments" data-open="view-attachments">
                    {attachments} attachment{attachments === 1 ? '' : 's'}
                  </a>
                </>
              )}
            </dd>
          </div>
        </dl>
        <div class="head-row">
          <Codes codes={props.codes} />
          <div class="actions">
            <a class="button secondary" href={PATHS.messageRaw.link(org.organizationId, message.id)} download>
              Download source (.eml)
            </a>
            {message.html !== null && (
              <a class="button secondary" href={PATHS.messageHtmlCheck.link(org.organizationId, message.id)} id="html-check-link">
                HTML support
              </a>
            )}
            {props.spamCheck && (
              <a class="button secondary" href={PATHS.messageSpamCheck.link(org.organizationId, message.id)} id="spam-check-link">
                Spam check
              </a>
            )}
            <PostForm action={PATHS.messageDelete.link(org.organizationId, message.id)} class="inline" confirm="Delete this message?" id="delete-message">
              <button type="submit" class="danger">
                Delete
              </button>
            </PostForm>
          </div>
        </div>
      </section>
      {message.html !== null && (
        <section class="card" id="view-html" aria-labelledby="view-html-title">
          {/* The view choices stay in reach while reading a long mail; console.js applies them in place. */}
          <div class="preview-bar">
            <h2 id="view-html-title" class="visually-hidden">
              HTML
            </h2>
            <nav class="preview-widths" aria-label="Preview width">
              {PREVIEW_WIDTHS.map((w) => (
                <a href={view(props.remoteImages, w.id)} aria-current={w.id === props.width ? 'true' : undefined} data-width={w.id}>
                  {w.label}
                  {/* Left out on a phone, where the bar must stay one line. */}
                  <span class="width-detail"> ({w.detail})</span>
                </a>
              ))}
            </nav>
            <a href={view(!props.remoteImages, props.width)} id="remote-images-toggle" data-images={props.remoteImages ? 'blocked' : 'remote'}>
              {props.remoteImages ? 'Block remote images' : 'Load remote images'}
            </a>
            <span class="muted" id="remote-images-note">
              {props.remoteImages ? 'Remote images are loaded (the sender can see that the message was opened).' : 'Scripts, forms and remote content are blocked.'}
            </span>
          </div>
          <iframe
            class={`message-html width-${props.width}`}
            id="message-html"
            title="Message HTML"
            sandbox={MESSAGE_HTML_SANDBOX}
            referrerpolicy="no-referrer"
            src={withQuery(PATHS.messageHtml.link(org.organizationId, message.id), { images: props.remoteImages ? 'remote' : undefined })}
          ></iframe>
        </section>
      )}
      <details class="card" id="view-text" open={!largeText}>
        <summary>
          <h2>Text</h2>
          {message.text === null && message.html !== null && <span class="badge">derived from the HTML</span>}
          {largeText && <span class="muted"> ({formatBytes(message.text!.length)}: loaded when opened)</span>}
        </summary>
        {largeText ? (
          // A large text part is a document of its own, loaded on demand, so the page stays small.
          <iframe class="message-source" title="Text" sandbox="" loading="lazy" src={withQuery(PATHS.messageSource.link(org.organizationId, message.id), { part: 'text' })}></iframe>
        ) : message.text !== null ? (
          <pre id="message-text">
            <TextWithLinks text={message.text} />
          </pre>
        ) : props.derivedText ? (
          <>
            <p class="muted">This message has no text part. Below is the text of its HTML, as a reader without HTML would get it; it is not part of the message.</p>
            <pre id="message-text" class="derived">
              <TextWithLinks text={props.derivedText} />
            </pre>
          </>
        ) : (
          <p class="muted">This message has no text part.</p>
        )}
      </details>
      <LinksAndCodes links={props.links} checkAction={props.linkCheck ? PATHS.messageCheckLinks.link(org.organizationId, message.id) : undefined} statuses={props.statuses} />
      <details class="card" id="view-attachments">
        <summary>
          <h2>Attachments ({attachments})</h2>
        </summary>
        {attachments === 0 ? (
          <p class="muted">None.</p>
        ) : (
          <Table columns={['File', 'Type', 'Size']}>
            {message.attachments.map((a) => (
              <tr>
                <td>
                  {THUMBNAIL_TYPES.test(a.content_type) && <img class="thumbnail" src={PATHS.attachment.link(org.organizationId, a.id)} alt={`Preview of ${a.filename}`} loading="lazy" />}
                  <a href={PATHS.attachment.link(org.organizationId, a.id)} download>
                    {a.filename}
                  </a>
                </td>
                <td class="mono">{a.content_type}</td>
                <td>{formatBytes(a.size_bytes)}</td>
              </tr>
            ))}
          </Table>
        )}
      </details>
      <details class="card" id="view-headers">
        <summary>
          <h2>Headers ({message.headers.length})</h2>
        </summary>
        <HeaderTable headers={message.headers} />
      </details>
      {message.html !== null && (
        <details class="card" id="html-source">
          <summary>
            <h2>HTML source</h2>
          </summary>
          <iframe class="message-source" title="HTML source" sandbox="" loading="lazy" src={withQuery(PATHS.messageSource.link(org.organizationId, message.id), { part: 'html' })}></iframe>
        </details>
      )}
      <details class="card" id="raw-source">
        <summary>
          <h2>Raw source</h2>
        </summary>
        <iframe class="message-source" title="Raw source" sandbox="" loading="lazy" src={withQuery(PATHS.messageSource.link(org.organizationId, message.id), { part: 'raw' })}></iframe>
      </details>
      <Shortcuts />
    </>
  )
}

/** A text part with its URLs as links that open in a new tab and send no referrer. */
export function TextWithLinks({ text }: { text: string }) {
  return (
    <>
      {splitLinks(text).map((run) =>
        run.href ? (
          <a href={run.href} target="_blank" rel="noopener noreferrer">
            {run.text}
          </a>
        ) : (
          run.text
        ),
      )}
    </>
  )
}

/** The one-time codes a test would extract, in the summary: usually what a reader came for. */
function Codes({ codes }: { codes: FoundCode[] }) {
  if (codes.length === 0) return null
  return (
    <ul class="codes" id="message-codes" aria-label="One-time codes">
      {codes.map((c, i) => (
        <li>
          <input id={`code-${i}`} type="text" readonly value={c.code} class="mono code" aria-label={`Code ${c.code}`} size={Math.max(6, c.code.length + 1)} />{' '}
          <button type="button" class="button secondary" data-copy={`code-${i}`}>
            Copy
          </button>{' '}
          <span class="muted code-context">…{c.context}…</span>
        </li>
      ))}
    </ul>
  )
}

/** Each header as received, its RFC 2047 encoded words decoded; the raw form is one click away where it differs. */
function HeaderTable({ headers }: { headers: [string, string][] }) {
  return (
    <table class="headers">
      <tbody>
        {headers.map(([name, value]) => {
          const decoded = decodedHeader(value)
          return (
            <tr>
              <th scope="row" class="mono">
                {name}
              </th>
              <td class="mono">
                {decoded}
                {decoded !== value && (
                  <details class="raw-header">
                    <summary>raw</summary>
                    <code class="raw-value">{value}</code>
                  </details>
                )}
              </td>
            </tr>
          )
        })}
      </tbody>
    </table>
  )
}

/** A header's value with its encoded words decoded; a value that cannot be decoded is shown as it came. */
function decodedHeader(value: string): string {
  if (!value.includes('=?')) return value
  try {
    return decodeHeaderText(value)
  } catch {
    return value
  }
}

/** Every link a test would extract from the message, collapsed under the email (a newsletter has dozens). */
function LinksAndCodes(props: { links: FoundLink[]; checkAction?: string; statuses?: Map<string, LinkStatus> }) {
  return (
    <details class="card" id="message-extracts" open={props.statuses !== undefined}>
      <summary>
        <h2>Links ({props.links.length})</h2>
      </summary>
      {props.links.length === 0 ? (
        <p class="muted">No links.</p>
      ) : (
        <ol class="links">
          {props.links.map((link) => (
            <li>
              <a href={link.url} target="_blank" rel="noopener noreferrer" class="mono">
                {link.url}
              </a>
              {link.text && <span class="muted"> · “{link.text}”</span>}
              {props.statuses?.has(link.url) && (
                <span class={`link-status ${(props.statuses.get(link.url)!.status ?? 0) >= 200 && (props.statuses.get(link.url)!.status ?? 0) < 400 ? 'ok' : 'bad'}`}>
                  {' '}
                  · {props.statuses.get(link.url)!.note}
                </span>
              )}
            </li>
          ))}
        </ol>
      )}
      {props.checkAction && props.links.length > 0 && (
        <PostForm action={props.checkAction}>
          <button type="submit" class="secondary">
            Check links
          </button>{' '}
          <span class="muted">A HEAD request from the server to each of the first {MAX_CHECKED} (public addresses only, redirects not followed).</span>
        </PostForm>
      )}
    </details>
  )
}

/** The keys console.js answers on a message page, listed where a reader finds them. */
export const MESSAGE_SHORTCUTS: [key: string, action: string][] = [
  ['j', 'older message'],
  ['k', 'newer message'],
  ['u', 'back to the inbox'],
  ['#  or  Delete', 'delete this message'],
  ['1', 'HTML'],
  ['2', 'text'],
  ['3', 'HTML source'],
  ['4', 'raw source'],
  ['5', 'attachments'],
  ['6', 'headers'],
  ['7', 'links'],
  ['c', 'copy the first one-time code'],
]

export function Shortcuts() {
  return (
    <details class="card shortcuts" id="shortcuts">
      <summary>
        <h2>Keyboard shortcuts</h2>
      </summary>
      <dl>
        {MESSAGE_SHORTCUTS.map(([key, action]) => (
          <div>
            <dt>
              <kbd>{key}</kbd>
            </dt>
            <dd>{action}</dd>
          </div>
        ))}
      </dl>
    </details>
  )
}
