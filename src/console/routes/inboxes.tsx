/** @jsxImportSource preact */
/**
 * The mail viewer's inbox pages: list, create (optional prefix), delete, one inbox's
 * messages, and its event stream. Every route is for members of the organisation; each
 * handler calls the same domain verbs as /v1 with the organisation as the principal, so
 * ids of another organisation are 404.
 */
import { sessionStillReads } from '../../core/sessions/sessions.ts'
import { DomainError } from '../../core/errors.ts'
import { createInbox } from '../../core/inboxes/create-inbox.ts'
import { deleteInbox } from '../../core/inboxes/delete-inbox.ts'
import { findActiveInbox } from '../../core/inboxes/find-inbox.ts'
import { getInbox } from '../../core/inboxes/get-inbox.ts'
import { listInboxes } from '../../core/inboxes/list-inboxes.ts'
import { listOrWaitForMessages } from '../../core/messages/list-or-wait.ts'
import { deleteMessage, getMessage } from '../../core/messages/get-message.ts'
import { Refusal } from '../../core/refusals.ts'
import { inboxStats } from '../../core/inboxes/inbox-stats.ts'
import { isFiltered, readInboxFilter, toMessageQuery } from '../inbox-filter.ts'
import { searchOrganization } from '../../core/messages/search-organization.ts'
import type { MessageQuery } from '../../core/messages/list-messages.ts'
import { SearchPage } from '../pages/search.tsx'
import { getUsage } from '../../core/usage.ts'
import { STREAM_SILENCE_SECONDS } from '../live-streams.ts'
import type { Member } from '../access.ts'
import { redirect, type ConsoleRequest } from '../context.ts'
import { asConsoleError } from '../errors.ts'
import { InboxesPage, InboxPage, MessageList } from '../pages/inboxes.tsx'
import { PATHS } from '../paths.ts'
import { renderFragment, renderPage } from '../render.tsx'
import { route, type Route } from '../router.ts'

/** Inboxes a page of the list shows: 50 rows keep the page under its 50 KB budget. */
const INBOXES_SHOWN = 50
/** Messages a page of the inbox shows: 50 rows keep the page under its 50 KB budget with full previews. */
export const MESSAGES_SHOWN = 50
/** "Empty this inbox" deletes at most this many pages of 100 per click (the page says when some are left). */
const EMPTY_ROUNDS = 50

async function inboxesPage(ctx: ConsoleRequest, { org, principal }: Member, error?: { status: number; message: string }): Promise<Response> {
  const cursor = ctx.url.searchParams.get('cursor') || undefined
  const listing = await listInboxes(ctx.s, principal, { limit: INBOXES_SHOWN, cursor })
  const page = (
    <InboxesPage
      org={org}
      listing={listing}
      stats={
        await inboxStats(
          ctx.s,
          listing.data.map((inbox) => inbox.id),
        )
      }
      usage={await getUsage(ctx.s, principal)}
      receivingDomain={ctx.s.config.receivingDomain}
      error={error?.message}
    />
  )
  return renderPage(ctx, `Inboxes · ${org.name}`, page, { org, section: 'inboxes', status: error?.status })
}

/** Sent by console.js's live refresh: answer with the message list alone (MessageList). */
export const LIVE_LIST_HEADER = 'x-live-list'

/** Matches a search shows. */
const SEARCH_RESULTS = 50

export const inboxRoutes: Route[] = [
  route({
    method: 'GET',
    path: PATHS.search,
    access: 'member',
    handler: async (ctx, { org, principal }) => {
      const filter = readInboxFilter(ctx.url)
      const query = toMessageQuery(filter, SEARCH_RESULTS)
      const error = 'error' in query ? query.error : undefined
      const results = error || !isFiltered(filter) ? null : await searchOrganization(ctx.s, principal, query as MessageQuery, SEARCH_RESULTS)
      const page = <SearchPage org={org} filter={filter} results={results} error={error} />
      return renderPage(ctx, `Search · ${org.name}`, page, { org, section: 'inboxes', status: error ? 400 : 200 })
    },
  }),
  route({
    method: 'GET',
    path: PATHS.inboxes,
    access: 'member',
    handler: (ctx, who) => inboxesPage(ctx, who),
  }),
  route({
    method: 'POST',
    path: PATHS.inboxes,
    access: 'member',
    handler: async (ctx, who) => {
      const { org, principal } = who
      const prefix = ctx.field('prefix').trim()
      try {
        const created = await createInbox(ctx.s, principal, { body: prefix ? JSON.stringify({ prefix }) : '', idempotencyKey: null })
        return redirect(PATHS.inbox.link(org.organizationId, created.body.data.id))
      } catch (error) {
        if (!(error instanceof DomainError)) throw error
        // Shown on the form it came from: a taken address, a bad prefix, the quota.
        const refusal = asConsoleError(error) as Refusal
        return inboxesPage(ctx, who, { status: refusal.kind === 'invalid' ? 400 : 409, message: refusal.message })
      }
    },
  }),
  route({
    method: 'GET',
    path: PATHS.inbox,
    access: 'member',
    handler: async (ctx, { org, principal }) => {
      const started = performance.now()
      const inbox = await getInbox(ctx.s, principal, ctx.params.inbox)
      const filter = readInboxFilter(ctx.url)
      const query = toMessageQuery(filter, MESSAGES_SHOWN)
      const listed = 'error' in query ? { data: [], next_cursor: null } : (await listOrWaitForMessages(ctx.s, principal, { inboxId: inbox.id, query, waitSeconds: 0, signal: ctx.request.signal }))!
      const error = 'error' in query ? query.error : undefined
      // The page's live refresh wants the list alone: a tenth of the page's bytes and of its
      // rendering, which is most of the time from a message's 250 to its row on screen.
      if (ctx.request.headers.get(LIVE_LIST_HEADER) === '1' && !error) {
        const list = <MessageList org={org} inbox={inbox} messages={listed.data} nextCursor={listed.next_cursor} filter={filter} smtpAddress={ctx.deps.smtpAddress()} />
        const response = renderFragment(ctx, list)
        // Marks the answer as the list alone: a page that got anything else (a sign-in page
        // after a redirect) leaves its list as it is.
        response.headers.set(LIVE_LIST_HEADER, '1')
        // The handler's own time, which the browser test's latency report sets against the
        // whole wait for the answer (the rest is queueing for the event loop and the CPU).
        response.headers.set('server-timing', `list;dur=${(performance.now() - started).toFixed(1)}`)
        return response
      }
      const page = (
        <InboxPage
          org={org}
          inbox={inbox}
          messages={listed.data}
          nextCursor={listed.next_cursor}
          filter={filter}
          error={error}
          smtpAddress={ctx.deps.smtpAddress()}
          refused={ctx.s.refusedDeliveries.recent(inbox.id)}
        />
      )
      return renderPage(ctx, `${inbox.address} · ${org.name}`, page, { org, section: 'inboxes', status: error ? 400 : 200 })
    },
  }),
  route({
    method: 'POST',
    path: PATHS.inboxDeleteMessage,
    access: 'member',
    handler: async (ctx, { org, principal }) => {
      const inbox = await getInbox(ctx.s, principal, ctx.params.inbox)
      const message = await getMessage(ctx.s, principal, ctx.field('message'))
      // The message must be of this inbox: the button's value is the client's to change.
      if (message.inbox_id !== inbox.id) throw new Refusal('not_found', 'Not found.')
      await deleteMessage(ctx.s, principal, message.id)
      return redirect(`${PATHS.inbox.link(org.organizationId, inbox.id)}${ctx.url.search}`)
    },
  }),
  route({
    method: 'POST',
    path: PATHS.inboxEmpty,
    access: 'member',
    handler: async (ctx, { org, principal }) => {
      const inbox = await getInbox(ctx.s, principal, ctx.params.inbox)
      // Page by page through the API's own verbs; bounded, so one click cannot hold the writer for long.
      for (let round = 0; round < EMPTY_ROUNDS; round++) {
        const listed = (await listOrWaitForMessages(ctx.s, principal, { inboxId: inbox.id, query: { limit: 100, includeContent: false }, waitSeconds: 0, signal: ctx.request.signal }))!
        for (const message of listed.data) await deleteMessage(ctx.s, principal, message.id)
        if (listed.next_cursor === null) break
      }
      return redirect(PATHS.inbox.link(org.organizationId, inbox.id))
    },
  }),
  route({
    method: 'POST',
    path: PATHS.inboxesDelete,
    access: 'member',
    handler: async (ctx, { org, principal }) => {
      await deleteInbox(ctx.s, principal, ctx.field('inbox'))
      return redirect(PATHS.inboxes.link(org.organizationId))
    },
  }),
  route({
    method: 'POST',
    path: PATHS.inboxDelete,
    access: 'member',
    handler: async (ctx, { org, principal }) => {
      await deleteInbox(ctx.s, principal, ctx.params.inbox)
      return redirect(PATHS.inboxes.link(org.organizationId))
    },
  }),
  route({
    method: 'GET',
    path: PATHS.inboxEvents,
    access: 'member',
    handler: async (ctx, { org, principal, user, session }) => {
      const inbox = await findActiveInbox(ctx.s, principal, ctx.params.inbox)
      // A HEAD has no body to stream; it must not hold a slot.
      if (ctx.request.method === 'HEAD') return new Response(null, { headers: { 'content-type': 'text/event-stream; charset=utf-8' } })
      const access = { userId: user.id, organizationId: org.organizationId, stillAllowed: () => sessionStillReads(ctx.s, { tokenSha256: session.tokenSha256, organizationId: org.organizationId }) }
      const stream = await ctx.deps.streams.stream(ctx.s, ctx.request.signal, access, inbox.id)
      // Between two keep-alive lines a stream is silent longer than HTTP_IDLE_TIMEOUT_SECONDS may allow.
      ctx.deps.connections.holdOpen(ctx.request, STREAM_SILENCE_SECONDS)
      return stream
    },
  }),
]
