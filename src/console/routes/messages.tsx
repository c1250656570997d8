/** @jsxImportSource preact */
/**
 * The mail viewer's message pages. The message's HTML is never part of a console page:
 * the page frames `/html`, a separate response whose own Content-Security-Policy starts
 * with `sandbox` (an opaque origin: no scripts, no forms, no cookies, no access to the
 * console) and allows no remote load unless the reader asked for remote images.
 * Attachments and the `.eml` source are downloads with the same headers as the API's.
 */
import { markMessagesRead } from '../../core/messages/console-listing.ts'
import { parseAllowList } from '../../core/messages/allow-list.ts'
import { imageUrls, readLinkCheck, runLinkCheck } from '../../core/messages/link-checks.ts'
import { LinkCheckPage } from '../pages/link-check.tsx'
import { downloadAttachment } from '../../core/attachments/download-attachment.ts'
import { consoleWaitMs } from '../../core/attachments/download-slots.ts'
import { DomainError } from '../../core/common/errors.ts'
import { deleteMessage, getMessage, getMessageSource } from '../../core/messages/get-message.ts'
import { listOrWaitForMessages } from '../../core/messages/list-or-wait.ts'
import { heldDownload } from '../../web/download-response.ts'
import { type ConsoleRequest, redirect } from '../context.ts'
import { Refusal } from '../../core/common/refusals.ts'
import { type LinkStatus, withAllowList } from '../../core/messages/link-check.ts'
import { HEIGHT_SCRIPT_SOURCE, withHeightReporter } from '../frame-height.ts'
import { htmlToText } from '../../core/inbound/preview.ts'
import { inlineCidImages } from '../inline-images.ts'
import { findCodes, findLinks, linksOpenInNewTab, MESSAGE_HTML_SANDBOX } from '../message-links.ts'
import type { Principal } from '../../core/api-keys/authenticate.ts'
import type { Member } from '../access.ts'
import { MessagePage } from '../pages/message.tsx'
import { MAX_TEXT_INLINE, PREVIEW_WIDTHS } from '../pages/message-sections.tsx'
import { sourceDocument } from '../pages/source.tsx'
import { HtmlCheckPage } from '../pages/html-check.tsx'
import { SpamCheckPage } from '../pages/spam-check.tsx'
import { checkSpam, spamFilterFrom, spamFilterName, type SpamVerdict } from '../checks/spam-check.ts'
import { checkHtmlSupport } from '../checks/html-support.ts'
import { PATHS } from '../paths.ts'
import { renderPage } from '../render.tsx'
import { route, type Route } from '../router.ts'

const HTML_POLICY = [
  `sandbox ${MESSAGE_HTML_SANDBOX}`,
  "default-src 'none'",
  `script-src ${HEIGHT_SCRIPT_SOURCE}`,
  "style-src 'unsafe-inline'",
  'font-src data:',
  "form-action 'none'",
  "base-uri 'none'",
  "frame-ancestors 'self'",
]
/** Message HTML as the frame shows it: inline styles and embedded images only (cid: images are inlined as data:). */
export const MESSAGE_HTML_CSP = [...HTML_POLICY, 'img-src data: cid:'].join('; ')
/** The same with remote images allowed (the toggle on the message page). */
export const MESSAGE_HTML_REMOTE_IMAGES_CSP = [...HTML_POLICY, 'img-src data: cid: https: http:'].join('; ')

/** The highlighted source views: our own escaped markup and inline style, nothing else, in a sandbox. */
export const SOURCE_CSP = [
  'sandbox',
  "default-src 'none'",
  "style-src 'unsafe-inline'",
  "form-action 'none'",
  "base-uri 'none'",
  "frame-ancestors 'self'",
].join('; ')

const wantsRemoteImages = (url: URL) => url.searchParams.get('images') === 'remote'

/** People with a link check running (see the check-links route). */
const checking = new Set<string>()
/** People with a spam check running. */
const spamChecking = new Set<string>()

/** CONSOLE_LINK_CHECK: `on`, `off`, or `auto` (on only when BASE_URL is this machine). */
function linkCheckEnabled(ctx: ConsoleRequest): boolean {
  const setting = ctx.s.config.consoleLinkCheck
  if (setting !== 'auto') return setting === 'on'
  return ['localhost', '127.0.0.1', '[::1]'].includes(new URL(ctx.s.publicUrls().baseUrl).hostname)
}

/**
 * The text a reader without HTML would get from an HTML-only message: one line per block,
 * spaces collapsed, blank runs cut to one. Marked as derived on the page.
 */
function derivedText(html: string): string {
  // Bounded like a text part shown in the page: the HTML source has the rest.
  return htmlToText(html.slice(0, 8 * MAX_TEXT_INLINE), MAX_TEXT_INLINE, '\n')
    .split('\n')
    .map((line) => line.replace(/\s+/g, ' ').trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim()
    .slice(0, MAX_TEXT_INLINE)
}

async function messagePage(
  ctx: ConsoleRequest<'message'>,
  { org, principal }: Member,
  statuses?: Map<string, LinkStatus>,
): Promise<Response> {
  const message = await getMessage(ctx.s, principal, ctx.params.message)
  // Opening a message in the console reads it (for every member, as a team inbox does); /v1
  // never does. A mark that cannot be written (a full volume, a database gone read-only) must
  // not cost the person the message: the page is shown, and the row stays unread.
  await markMessagesRead(ctx.s, principal, [message.id], true).catch((error) =>
    ctx.s.logger.info('console_read_mark_failed', { message_id: message.id, error: String(error).slice(0, 200) }),
  )
  // Newer and older neighbours in the inbox's list (its newest 100), for the j/k keys and links.
  const listed = (await listOrWaitForMessages(ctx.s, principal, {
    inboxId: message.inbox_id,
    query: { limit: 100, includeContent: false },
    waitSeconds: 0,
    signal: ctx.request.signal,
  }))!.data
  const at = listed.findIndex((m) => m.id === message.id)
  const newer = at > 0 ? listed[at - 1]!.id : undefined
  const older = at >= 0 && at + 1 < listed.length ? listed[at + 1]!.id : undefined
  const links = findLinks(message.html, message.text)
  const codes = findCodes(message.subject, message.text, message.html)
  const width = PREVIEW_WIDTHS.find((w) => w.id === ctx.url.searchParams.get('width'))?.id ?? 'desktop'
  const page = (
    <MessagePage
      org={org}
      message={message}
      remoteImages={wantsRemoteImages(ctx.url)}
      width={width}
      links={links}
      codes={codes}
      newer={newer}
      older={older}
      linkCheck={linkCheckEnabled(ctx)}
      spamCheck={spamFilterFrom(ctx.s.config.consoleSpamCheck) !== null}
      statuses={statuses}
      derivedText={message.text === null && message.html !== null ? derivedText(message.html) : undefined}
    />
  )
  return renderPage(ctx, `${message.subject || '(no subject)'} · ${org.name}`, page, { org, section: 'inboxes' })
}

/**
 * An inline image's bytes, or null when they fail their SHA-256 check (already logged and
 * counted): the message still shows, with that one image broken instead of wrong.
 */
async function inlineBytes(ctx: ConsoleRequest, principal: Principal, attachmentId: string): Promise<Buffer | null> {
  try {
    return (await downloadAttachment(ctx.s, principal, attachmentId)).content
  } catch (error) {
    if (error instanceof DomainError && error.code === 'internal_error') return null
    throw error
  }
}

export const messageRoutes: Route[] = [
  route({
    method: 'GET',
    path: PATHS.message,
    access: 'member',
    handler: (ctx, who) => messagePage(ctx, who),
  }),
  route({
    method: 'POST',
    path: PATHS.messageCheckLinks,
    access: 'member',
    handler: async (ctx, who) => {
      if (!linkCheckEnabled(ctx)) throw new Refusal('not_found', 'Not found.')
      const message = await getMessage(ctx.s, who.principal, ctx.params.message)
      const user = who.user.id
      // One check at a time per person: each is up to MAX_CHECKED outbound requests.
      if (checking.has(user))
        throw new Refusal('throttled', 'A link check is already running; wait for it to finish.', 5)
      checking.add(user)
      try {
        const links = findLinks(message.html, message.text).map((link) => link.url)
        const images = imageUrls(message.html)
        const id = await runLinkCheck(
          ctx.s,
          who.principal,
          { messageId: message.id, links, images },
          withAllowList(parseAllowList(ctx.s.config.consoleLinkCheckAllow)),
        )
        ctx.s.logger.info('console_links_checked', {
          message_id: message.id,
          user_id: user,
          links: links.length,
          images: images.length,
        })
        // Post, redirect, get: the result has an address of its own.
        return redirect(PATHS.messageLinkCheck.link(who.org.organizationId, message.id, id))
      } finally {
        checking.delete(user)
      }
    },
  }),
  route({
    method: 'GET',
    path: PATHS.messageLinkCheck,
    access: 'member',
    handler: async (ctx, { org, principal }) => {
      const check = await readLinkCheck(ctx.s, principal, ctx.params.check)
      if (check.messageId !== ctx.params.message) throw new Refusal('not_found', 'Not found.')
      const message = await getMessage(ctx.s, principal, check.messageId)
      const page = (
        <LinkCheckPage
          org={org}
          message={message}
          check={check}
          canRecheck={linkCheckEnabled(ctx)}
          allowList={ctx.s.config.consoleLinkCheckAllow}
        />
      )
      return renderPage(ctx, `Link check · ${message.subject || '(no subject)'} · ${org.name}`, page, {
        org,
        section: 'inboxes',
      })
    },
  }),
  route({
    method: 'GET',
    path: PATHS.messageHtml,
    access: 'member',
    handler: async (ctx, { principal }) => {
      const message = await getMessage(ctx.s, principal, ctx.params.message)
      // The bytes are read asynchronously: a first pass names the images the HTML refers to, the second inlines them.
      const wanted = new Set<string>()
      inlineCidImages(message.html ?? '', message.attachments, (id) => {
        wanted.add(id)
        return null
      })
      const bytes = new Map<string, Buffer | null>()
      for (const id of wanted) bytes.set(id, await inlineBytes(ctx, principal, id))
      const html = withHeightReporter(
        linksOpenInNewTab(inlineCidImages(message.html ?? '', message.attachments, (id) => bytes.get(id) ?? null)),
      )
      return new Response(html, {
        headers: {
          'content-type': 'text/html; charset=utf-8',
          'content-security-policy': wantsRemoteImages(ctx.url) ? MESSAGE_HTML_REMOTE_IMAGES_CSP : MESSAGE_HTML_CSP,
          'cache-control': 'private, no-store',
          // A link followed from the message tells its site nothing about the console.
          'referrer-policy': 'no-referrer',
        },
      })
    },
  }),
  route({
    method: 'GET',
    path: PATHS.messageHtmlCheck,
    access: 'member',
    handler: async (ctx, { org, principal }) => {
      const message = await getMessage(ctx.s, principal, ctx.params.message)
      if (message.html === null) throw new Refusal('not_found', 'This message has no HTML part.')
      const page = <HtmlCheckPage org={org} message={message} report={checkHtmlSupport(message.html)} />
      return renderPage(ctx, `HTML support · ${message.subject || '(no subject)'} · ${org.name}`, page, {
        org,
        section: 'inboxes',
      })
    },
  }),
  route({
    method: 'GET',
    path: PATHS.messageSpamCheck,
    access: 'member',
    handler: async (ctx, { org, principal, user }) => {
      const filter = spamFilterFrom(ctx.s.config.consoleSpamCheck)
      if (!filter) throw new Refusal('not_found', 'Not found.')
      const message = await getMessage(ctx.s, principal, ctx.params.message)
      // One check at a time per person: each sends a whole message to the filter.
      if (spamChecking.has(user.id))
        throw new Refusal('throttled', 'A spam check is already running; wait for it to finish.', 5)
      spamChecking.add(user.id)
      let verdict: SpamVerdict
      try {
        verdict = await checkSpam(filter, await getMessageSource(ctx.s, principal, message.id), {
          from: message.from.address || null,
          to: message.to,
        })
      } finally {
        spamChecking.delete(user.id)
      }
      if (!verdict.available)
        ctx.s.logger.warn('console_spam_filter_unavailable', {
          filter: spamFilterName(filter),
          reason: verdict.reason,
          message_id: message.id,
        })
      const page = <SpamCheckPage org={org} message={message} filterName={spamFilterName(filter)} verdict={verdict} />
      return renderPage(ctx, `Spam check · ${message.subject || '(no subject)'} · ${org.name}`, page, {
        org,
        section: 'inboxes',
        status: verdict.available ? 200 : 503,
      })
    },
  }),
  route({
    method: 'GET',
    path: PATHS.messageSource,
    access: 'member',
    handler: async (ctx, { principal }) => {
      const asked = ctx.url.searchParams.get('part')
      const part = asked === 'html' || asked === 'text' ? asked : 'raw'
      const source =
        part === 'raw'
          ? new TextDecoder().decode(await getMessageSource(ctx.s, principal, ctx.params.message))
          : ((await getMessage(ctx.s, principal, ctx.params.message))[part] ?? '')
      return new Response(sourceDocument(source, part), {
        headers: {
          'content-type': 'text/html; charset=utf-8',
          'content-security-policy': SOURCE_CSP,
          'cache-control': 'private, no-store',
          'referrer-policy': 'no-referrer',
        },
      })
    },
  }),
  route({
    method: 'GET',
    path: PATHS.messageRaw,
    access: 'member',
    handler: async (ctx, { principal }) => {
      const id = ctx.params.message
      // The same per-organisation slots as the API's downloads, waited for (web/download-response.ts).
      return heldDownload(
        ctx.s.downloads,
        principal.organizationId,
        async () => ({
          content: await getMessageSource(ctx.s, principal, id),
          contentType: 'message/rfc822',
          filename: `${id}.eml`,
        }),
        {
          waitForSlotMs: consoleWaitMs(ctx.s.config.httpIdleTimeoutSeconds),
        },
      )
    },
  }),
  route({
    method: 'POST',
    path: PATHS.messageDelete,
    access: 'member',
    handler: async (ctx, { org, principal }) => {
      const message = await getMessage(ctx.s, principal, ctx.params.message)
      await deleteMessage(ctx.s, principal, message.id)
      return redirect(PATHS.inbox.link(org.organizationId, message.inbox_id))
    },
  }),
  route({
    method: 'GET',
    path: PATHS.attachment,
    access: 'member',
    handler: async (ctx, { principal }) => {
      return heldDownload(
        ctx.s.downloads,
        principal.organizationId,
        () => downloadAttachment(ctx.s, principal, ctx.params.attachment),
        {
          waitForSlotMs: consoleWaitMs(ctx.s.config.httpIdleTimeoutSeconds),
        },
      )
    },
  }),
]
