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
import { formatBytes } from './inboxes.tsx'
import { PostForm, Table, Time } from './shell.tsx'

/** Raster images only get a thumbnail (an SVG would be drawn by the console page's own renderer). */
const THUMBNAIL_TYPES = /^image\/(png|jpeg|gif|webp|avif)$/i

export type PreviewWidth = 'phone' | 'tablet' | 'desktop'
export const PREVIEW_WIDTHS: { id: PreviewWidth; label: string }[] = [
  { id: 'phone', label: 'Phone (375 px)' },
  { id: 'tablet', label: 'Tablet (768 px)' },
  { id: 'desktop', label: 'Desktop (full width)' },
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
  statuses?: Map<string, LinkStatus>
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
      <section class="card">
        <h2 class="page-title" id="message-subject">
          {message.subject || '(no subject)'}
        </h2>
        <table>
          <tbody>
            <tr>
              <th scope="row">From</th>
              <td id="message-from">{message.from.name ? `${message.from.name} <${message.from.address}>` : message.from.address}</td>
            </tr>
            <tr>
              <th scope="row">To</th>
              <td>{message.to}</td>
            </tr>
            <tr>
              <th scope="row">Received</th>
              <td>
                <Time at={message.received_at} />
              </td>
            </tr>
            <tr>
              <th scope="row">Size</th>
              <td>{formatBytes(message.size_bytes)}</td>
            </tr>
          </tbody>
        </table>
        <div class="actions">
          <a class="button secondary" href={PATHS.messageRaw.link(org.organizationId, message.id)} download>
            Download source (.eml)
          </a>
          <PostForm action={PATHS.messageDelete.link(org.organizationId, message.id)} class="inline" confirm="Delete this message?" id="delete-message">
            <button type="submit" class="danger">
              Delete
            </button>
          </PostForm>
        </div>
      </section>
      <LinksAndCodes links={props.links} codes={props.codes} checkAction={props.linkCheck ? PATHS.messageCheckLinks.link(org.organizationId, message.id) : undefined} statuses={props.statuses} />
      {message.html !== null && (
        <section class="card" id="view-html">
          <h2>HTML</h2>
          <p class="muted">
            {props.remoteImages ? 'Remote images are loaded (the sender can see that the message was opened). ' : 'Scripts, forms and remote content are blocked. '}
            <a href={view(!props.remoteImages, props.width)} id="remote-images-toggle">
              {props.remoteImages ? 'Block remote images' : 'Load remote images'}
            </a>
          </p>
          <nav class="preview-widths" aria-label="Preview width">
            {PREVIEW_WIDTHS.map((w) => (
              <a href={view(props.remoteImages, w.id)} aria-current={w.id === props.width ? 'true' : undefined} data-width={w.id}>
                {w.label}
              </a>
            ))}
          </nav>
          <iframe
            class={`message-html width-${props.width}`}
            title="Message HTML"
            sandbox={MESSAGE_HTML_SANDBOX}
            referrerpolicy="no-referrer"
            src={withQuery(PATHS.messageHtml.link(org.organizationId, message.id), { images: props.remoteImages ? 'remote' : undefined })}
          ></iframe>
        </section>
      )}
      <section class="card" id="view-text">
        <h2>Text</h2>
        {message.text === null ? (
          <p class="muted">This message has no text part.</p>
        ) : (
          <pre id="message-text">
            <TextWithLinks text={message.text} />
          </pre>
        )}
      </section>
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
      <section class="card" id="view-attachments">
        <h2>Attachments</h2>
        {message.attachments.length === 0 ? (
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
      </section>
      <section class="card" id="view-headers">
        <h2>Headers</h2>
        <table class="headers">
          <tbody>
            {message.headers.map(([name, value]) => (
              <tr>
                <th scope="row" class="mono">
                  {name}
                </th>
                <td class="mono">{value}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
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

/** What a test would extract from the message, shown to the person debugging it. */
function LinksAndCodes(props: { links: FoundLink[]; codes: FoundCode[]; checkAction?: string; statuses?: Map<string, LinkStatus> }) {
  return (
    <section class="card" id="message-extracts">
      <h2>One-time codes</h2>
      {props.codes.length === 0 ? (
        <p class="muted">No code found (a code follows a word such as "code", "PIN" or "verification", or is a number of six digits on its own).</p>
      ) : (
        <ul class="codes">
          {props.codes.map((c, i) => (
            <li>
              <input id={`code-${i}`} type="text" readonly value={c.code} class="mono code" aria-label={`Code ${c.code}`} size={Math.max(6, c.code.length + 1)} />{' '}
              <button type="button" class="button secondary" data-copy={`code-${i}`}>
                Copy
              </button>{' '}
              <span class="muted">…{c.context}…</span>
            </li>
          ))}
        </ul>
      )}
      <h2>Links</h2>
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
    </section>
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
