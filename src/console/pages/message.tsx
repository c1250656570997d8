/** @jsxImportSource preact */
/**
 * One message: summary, actions, the HTML in a sandboxed frame (its own response, see
 * routes/messages.tsx), the text part, attachments and every header. All of it is text
 * to the renderer; the message's HTML never enters this page's markup. The summary is
 * here; the sections below it are in message-sections.tsx.
 */
import type { LinkStatus } from '../../core/messages/link-check.ts'
import type { FoundCode, FoundLink } from '../message-links.ts'
import { PATHS } from '../paths.ts'
import { formatBytes } from './inboxes.tsx'
import {
  AttachmentsSection,
  HeadersSection,
  HtmlPreview,
  LinksSection,
  type MessageSectionProps,
  type PreviewWidth,
  Shortcuts,
  SourceSections,
  TextSection,
} from './message-sections.tsx'
import { PostForm, Time } from './shell.tsx'

export function MessagePage(
  props: MessageSectionProps & {
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
  },
) {
  const { org, message } = props
  return (
    <>
      <MessageNav org={org} message={message} newer={props.newer} older={props.older} />
      <MessageSummary org={org} message={message} codes={props.codes} spamCheck={props.spamCheck} />
      {message.html !== null && (
        <HtmlPreview org={org} message={message} remoteImages={props.remoteImages} width={props.width} />
      )}
      <TextSection org={org} message={message} derivedText={props.derivedText} />
      <LinksSection
        links={props.links}
        checkAction={props.linkCheck ? PATHS.messageCheckLinks.link(org.organizationId, message.id) : undefined}
        statuses={props.statuses}
      />
      <AttachmentsSection org={org} message={message} />
      <HeadersSection headers={message.headers} />
      <SourceSections org={org} message={message} />
      <Shortcuts />
    </>
  )
}

/** Back to the inbox, and to the messages either side of this one in it. */
function MessageNav({ org, message, newer, older }: MessageSectionProps & { newer?: string; older?: string }) {
  return (
    <nav class="message-nav" aria-label="Messages">
      <a href={PATHS.inbox.link(org.organizationId, message.inbox_id)} id="back-to-inbox">
        ← {message.to}
      </a>
      {newer && (
        <a href={PATHS.message.link(org.organizationId, newer)} id="newer-message" rel="prev">
          Newer
        </a>
      )}
      {older && (
        <a href={PATHS.message.link(org.organizationId, older)} id="older-message" rel="next">
          Older
        </a>
      )}
    </nav>
  )
}

/** The summary is kept to a few lines so the email itself starts inside the first screen, phones included. */
function MessageSummary(props: MessageSectionProps & { codes: FoundCode[]; spamCheck: boolean }) {
  const { message } = props
  const attachments = message.attachments.length
  return (
    <section class="card message-head">
      <h2 class="page-title" id="message-subject">
        {message.subject || '(no subject)'}
      </h2>
      <dl class="message-meta">
        <div>
          <dt>From</dt>
          <dd id="message-from">
            {message.from.name ? `${message.from.name} <${message.from.address}>` : message.from.address}
          </dd>
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
        <MessageActions org={props.org} message={message} spamCheck={props.spamCheck} />
      </div>
    </section>
  )
}

/** The one-time codes a test would extract, in the summary: usually what a reader came for. */
function Codes({ codes }: { codes: FoundCode[] }) {
  if (codes.length === 0) return null
  return (
    <ul class="codes" id="message-codes" aria-label="One-time codes">
      {codes.map((c, i) => (
        <li>
          <input
            id={`code-${i}`}
            type="text"
            readonly
            value={c.code}
            class="mono code"
            aria-label={`Code ${c.code}`}
            size={Math.max(6, c.code.length + 1)}
          />{' '}
          <button type="button" class="button secondary" data-copy={`code-${i}`}>
            Copy
          </button>{' '}
          <span class="muted code-context">…{c.context}…</span>
        </li>
      ))}
    </ul>
  )
}

/** Download, the checks that apply to this message, and delete. */
function MessageActions({ org, message, spamCheck }: MessageSectionProps & { spamCheck: boolean }) {
  return (
    <div class="actions">
      <a class="button secondary" href={PATHS.messageRaw.link(org.organizationId, message.id)} download>
        Download source (.eml)
      </a>
      {message.html !== null && (
        <a
          class="button secondary"
          href={PATHS.messageHtmlCheck.link(org.organizationId, message.id)}
          id="html-check-link"
        >
          HTML support
        </a>
      )}
      {spamCheck && (
        <a
          class="button secondary"
          href={PATHS.messageSpamCheck.link(org.organizationId, message.id)}
          id="spam-check-link"
        >
          Spam check
        </a>
      )}
      <PostForm
        action={PATHS.messageDelete.link(org.organizationId, message.id)}
        class="inline"
        confirm="Delete this message?"
        id="delete-message"
      >
        <button type="submit" class="danger">
          Delete
        </button>
      </PostForm>
    </div>
  )
}
