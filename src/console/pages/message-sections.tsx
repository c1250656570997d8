/** @jsxImportSource preact */
/**
 * The message page's sections below its summary, in page order: the HTML in a sandboxed
 * frame, the text part, links, attachments, headers, the two sources and the shortcuts.
 * Each is a card of its own with a stable id (console.js's keys open them by id).
 */
import type { Membership } from '../../core/organizations/organizations.ts'
import type { Message } from '../../core/common/models.ts'
import { type LinkStatus, MAX_CHECKED } from '../../core/messages/link-check.ts'
import { decodeHeaderText } from '../../core/inbound/mime/encoded-words.ts'
import { type FoundLink, MESSAGE_HTML_SANDBOX, splitLinks } from '../message-links.ts'
import { PATHS, withQuery } from '../paths.ts'
import { formatBytes } from './inboxes.tsx'
import { PostForm, Table } from './shell.tsx'

/** What every section is about: the message, and the organisation its links are under. */
export interface MessageSectionProps {
  org: Membership
  message: Message
}

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

/** The message's HTML in a sandboxed frame of its own response, under a bar of view choices. */
export function HtmlPreview(props: MessageSectionProps & { remoteImages: boolean; width: PreviewWidth }) {
  const { org, message, remoteImages, width } = props
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
    <section class="card" id="view-html" aria-labelledby="view-html-title">
      {/* The view choices stay in reach while reading a long mail; console.js applies them in place. */}
      <div class="preview-bar">
        <h2 id="view-html-title" class="visually-hidden">
          HTML
        </h2>
        <nav class="preview-widths" aria-label="Preview width">
          {PREVIEW_WIDTHS.map((w) => (
            <a href={view(remoteImages, w.id)} aria-current={w.id === width ? 'true' : undefined} data-width={w.id}>
              {w.label}
              {/* Left out on a phone, where the bar must stay one line. */}
              <span class="width-detail"> ({w.detail})</span>
            </a>
          ))}
        </nav>
        <a
          href={view(!remoteImages, width)}
          id="remote-images-toggle"
          data-images={remoteImages ? 'blocked' : 'remote'}
        >
          {remoteImages ? 'Block remote images' : 'Load remote images'}
        </a>
        <span class="muted" id="remote-images-note">
          {remoteImages
            ? 'Remote images are loaded (the sender can see that the message was opened).'
            : 'Scripts, forms and remote content are blocked.'}
        </span>
      </div>
      <iframe
        class={`message-html width-${width}`}
        id="message-html"
        title="Message HTML"
        sandbox={MESSAGE_HTML_SANDBOX}
        referrerpolicy="no-referrer"
        src={withQuery(PATHS.messageHtml.link(org.organizationId, message.id), {
          images: remoteImages ? 'remote' : undefined,
        })}
      ></iframe>
    </section>
  )
}

/** The text part: inline with its links, framed when large, or the HTML's text marked as derived. */
export function TextSection(props: MessageSectionProps & { derivedText?: string }) {
  const { org, message } = props
  const largeText = message.text !== null && message.text.length > MAX_TEXT_INLINE
  return (
    <details class="card" id="view-text" open={!largeText}>
      <summary>
        <h2>Text</h2>
        {message.text === null && message.html !== null && <span class="badge">derived from the HTML</span>}
        {largeText && <span class="muted"> ({formatBytes(message.text!.length)}: loaded when opened)</span>}
      </summary>
      {largeText ? (
        // A large text part is a document of its own, loaded on demand, so the page stays small.
        <iframe
          class="message-source"
          title="Text"
          sandbox=""
          loading="lazy"
          src={withQuery(PATHS.messageSource.link(org.organizationId, message.id), { part: 'text' })}
        ></iframe>
      ) : message.text !== null ? (
        <pre id="message-text">
          <TextWithLinks text={message.text} />
        </pre>
      ) : props.derivedText ? (
        <>
          <p class="muted">
            This message has no text part. Below is the text of its HTML, as a reader without HTML would get it; it is
            not part of the message.
          </p>
          <pre id="message-text" class="derived">
            <TextWithLinks text={props.derivedText} />
          </pre>
        </>
      ) : (
        <p class="muted">This message has no text part.</p>
      )}
    </details>
  )
}

/** A text part with its URLs as links that open in a new tab and send no referrer. */
function TextWithLinks({ text }: { text: string }) {
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

/** Every link a test would extract from the message, collapsed under the email (a newsletter has dozens). */
export function LinksSection(props: { links: FoundLink[]; checkAction?: string; statuses?: Map<string, LinkStatus> }) {
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
              {props.statuses?.has(link.url) && <LinkStatusNote status={props.statuses.get(link.url)!} />}
            </li>
          ))}
        </ol>
      )}
      {props.checkAction && props.links.length > 0 && (
        <PostForm action={props.checkAction}>
          <button type="submit" class="secondary">
            Check links
          </button>{' '}
          <span class="muted">
            A HEAD request from the server to each of the first {MAX_CHECKED} (public addresses only, redirects not
            followed).
          </span>
        </PostForm>
      )}
    </details>
  )
}

/** One checked link's answer, green for a 2xx or 3xx and red for anything else or none. */
function LinkStatusNote({ status }: { status: LinkStatus }) {
  const code = status.status ?? 0
  return <span class={`link-status ${code >= 200 && code < 400 ? 'ok' : 'bad'}`}> · {status.note}</span>
}

/** Each attachment to download, raster images with a thumbnail. */
export function AttachmentsSection({ org, message }: MessageSectionProps) {
  const attachments = message.attachments.length
  return (
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
                {THUMBNAIL_TYPES.test(a.content_type) && (
                  <img
                    class="thumbnail"
                    src={PATHS.attachment.link(org.organizationId, a.id)}
                    alt={`Preview of ${a.filename}`}
                    loading="lazy"
                  />
                )}
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
  )
}

/** Each header as received, its RFC 2047 encoded words decoded; the raw form is one click away where it differs. */
export function HeadersSection({ headers }: { headers: [string, string][] }) {
  return (
    <details class="card" id="view-headers">
      <summary>
        <h2>Headers ({headers.length})</h2>
      </summary>
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
    </details>
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

/** The HTML source (when there is HTML) and the raw source, each framed and loaded only when opened. */
export function SourceSections({ org, message }: MessageSectionProps) {
  const source = (part: 'html' | 'raw') => withQuery(PATHS.messageSource.link(org.organizationId, message.id), { part })
  return (
    <>
      {message.html !== null && (
        <details class="card" id="html-source">
          <summary>
            <h2>HTML source</h2>
          </summary>
          <iframe class="message-source" title="HTML source" sandbox="" loading="lazy" src={source('html')}></iframe>
        </details>
      )}
      <details class="card" id="raw-source">
        <summary>
          <h2>Raw source</h2>
        </summary>
        <iframe class="message-source" title="Raw source" sandbox="" loading="lazy" src={source('raw')}></iframe>
      </details>
    </>
  )
}

/** The keys console.js answers on a message page, listed where a reader finds them. */
const MESSAGE_SHORTCUTS: [key: string, action: string][] = [
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
