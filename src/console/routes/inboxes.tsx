/** @jsxImportSource preact */
/**
 * The mail viewer's inbox pages: list, create (optional prefix), delete, one inbox's
 * messages, and its event stream. Every route is for members of the organisation; each
 * handler calls the same domain verbs as /v1 with the organisation as the principal, so
 * ids of another organisation are 404.
 */
import { sessionStillReads } from '../../core/sessions/sessions.ts'
import { DomainError } from '../../core/common/errors.ts'
import { createInbox } from '../../core/inboxes/create-inbox.ts'
import { deleteInbox } from '../../core/inboxes/delete-inbox.ts'
import { findActiveInbox } from '../../core/inboxes/find-inbox.ts'
import { getInbox } from '../../core/inboxes/get-inbox.ts'
import { listInboxes } from '../../core/inboxes/list-inboxes.ts'
import { listOrWaitForMessages } from '../../core/messages/list-or-wait.ts'
import { deleteMessage, getMessage } from '../../core/messages/get-message.ts'
import { Refusal } from '../../core/common/refusals.ts'
import { inboxStats } from '../../core/inboxes/inbox-stats.ts'
import { isFiltered, readInboxFilter, readPageSize, readSearchLine, toMessageQuery } from '../inbox-filter.ts'
import {
  type ConsolePage,
  listForConsole,
  markMessagesRead,
  messagesOfInbox,
} from '../../core/messages/console-listing.ts'
import { searchOrganization } from '../../core/messages/search-organization.ts'
import type { MessageQuery } from '../../core/messages/list-messages.ts'
import { SearchPage } from '../pages/search.tsx'
import { getUsage } from '../../core/limits/usage.ts'
import { STREAM_SILENCE_SECONDS } from '../live-streams.ts'
import type { Member } from '../access.ts'
import { redirect, type ConsoleRequest } from '../context.ts'
import { asConsoleError } from '../errors.ts'
import { ADDRESS_FILTER_LIMIT, InboxesPage, InboxPage, InboxTable, MessageList } from '../pages/inboxes.tsx'
import { hasControlCharacter, PATHS } from '../paths.ts'
import { renderFragment, renderPage } from '../render.tsx'
import { route, type Route } from '../router.ts'

/** Inboxes a page of the list shows: 50 rows keep the page under its 50 KB budget. */
const INBOXES_SHOWN = 50
/** Messages a page of the inbox shows: 50 rows keep the page under its 50 KB budget with full previews. */
const MESSAGES_SHOWN = 50
/** "Empty this inbox" deletes at most this many pages of 100 per click (the page says when some are left). */
const EMPTY_ROUNDS = 50

async function inboxesPage(
  ctx: ConsoleRequest,
  { org, principal }: Member,
  error?: { status: number; message: string },
): Promise<Response> {
  const cursor = ctx.url.searchParams.get('cursor') || undefined
  const address = (ctx.url.searchParams.get('address') ?? '').trim().slice(0, 1000)
  // A filter that cannot be used is said on the page (400), never cut short or ignored.
  const filterError =
    address.length > ADDRESS_FILTER_LIMIT
      ? `Address contains: at most ${ADDRESS_FILTER_LIMIT} characters.`
      : hasControlCharacter(address) || /[\p{Cc}\p{Cf}]/u.test(address)
        ? 'Address contains: control characters cannot be searched for.'
        : undefined
  const listing = filterError
    ? { data: [], next_cursor: null }
    : await listInboxes(ctx.s, principal, { limit: INBOXES_SHOWN, cursor, addressContains: address || undefined })
  const stats = await inboxStats(
    ctx.s,
    listing.data.map((inbox) => inbox.id),
  )
  // The live refresh (console.js) wants the table alone.
  if (ctx.request.headers.get(LIVE_INBOXES_HEADER) === '1' && !error && !filterError) {
    const response = renderFragment(ctx, <InboxTable org={org} listing={listing} stats={stats} address={address} />)
    response.headers.set(LIVE_INBOXES_HEADER, '1')
    return response
  }
  const page = (
    <InboxesPage
      org={org}
      listing={listing}
      stats={stats}
      usage={await getUsage(ctx.s, principal)}
      receivingDomain={ctx.s.config.receivingDomain}
      address={address}
      error={error?.message}
      filterError={filterError}
      prefix={ctx.failedField('prefix')}
    />
  )
  return renderPage(ctx, `Inboxes · ${org.name}`, page, {
    org,
    section: 'inboxes',
    status: error?.status ?? (filterError ? 400 : undefined),
  })
}

/** Sent by console.js's live refresh: answer with the message list alone (MessageList). */
const LIVE_LIST_HEADER = 'x-live-list'
/** Sent by the Inboxes page's live refresh: answer with its table alone (InboxTable). */
const LIVE_INBOXES_HEADER = 'x-live-inboxes'
/** On the list-alone answer: the inbox's unread count, for the favicon badge and the tab's title. */
const UNREAD_HEADER = 'x-unread'
/** The most messages one bulk action takes (a page holds at most 100). */
const BULK_MAX = 100

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
      const line = readSearchLine(filter)
      const error = 'error' in query ? query.error : 'error' in line ? line.error : undefined
      const results =
        error || 'error' in line || !isFiltered(filter)
          ? null
          : await searchOrganization(ctx.s, principal, { ...(query as MessageQuery), line: line.line }, SEARCH_RESULTS)
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
        const created = await createInbox(ctx.s, principal, {
          body: prefix ? JSON.stringify({ prefix }) : '',
          idempotencyKey: null,
        })
        return redirect(PATHS.inbox.link(org.organizationId, created.body.data.id))
      } catch (error) {
        if (!(error instanceof DomainError)) throw error
        // Shown on the form it came from (a taken address, a bad prefix,
        // the quota), after a redirect: reloading does not post again.
        const refusal = asConsoleError(error) as Refusal
        return ctx.failBack(PATHS.inboxes.link(org.organizationId), {
          status: refusal.kind === 'invalid' ? 400 : 409,
          message: refusal.message,
          fields: { prefix },
        })
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
      const size = readPageSize(filter)
      const query = toMessageQuery(filter, typeof size === 'number' ? size : MESSAGES_SHOWN)
      const line = readSearchLine(filter)
      // The first reason the view cannot be read: a field of the form, the search line, the page size.
      const error =
        'error' in query
          ? query.error
          : 'error' in line
            ? line.error
            : typeof size === 'number'
              ? undefined
              : size.error
      const listing: ConsolePage =
        error || 'error' in query || 'error' in line
          ? { rows: [], total: 0, first: 0, older: null, newer: null, inboxUnread: null }
          : await listForConsole(ctx.s, principal, {
              inboxId: inbox.id,
              query,
              line: line.line,
              before: filter.before || undefined,
            })
      // The page's live refresh wants the list alone: a tenth of the page's bytes and of its
      // rendering, which is most of the time from a message's 250 to its row on screen.
      if (ctx.request.headers.get(LIVE_LIST_HEADER) === '1' && !error) {
        const list = (
          <MessageList org={org} inbox={inbox} listing={listing} filter={filter} smtpAddress={ctx.deps.smtpAddress()} />
        )
        const response = renderFragment(ctx, list)
        // Marks the answer as the list alone: a page that got anything else (a sign-in page
        // after a redirect) leaves its list as it is.
        response.headers.set(LIVE_LIST_HEADER, '1')
        // The unread count for the tab's favicon badge and title (console.js).
        // From the page's own count when it covers the whole inbox (every
        // refresh of the plain list): one query fewer on the way to the new row.
        response.headers.set(
          UNREAD_HEADER,
          String(listing.inboxUnread ?? (await inboxStats(ctx.s, [inbox.id])).get(inbox.id)?.unread ?? 0),
        )
        // The handler's own time, which the browser test's latency report sets against the
        // whole wait for the answer (the rest is queueing for the event loop and the CPU).
        response.headers.set('server-timing', `list;dur=${(performance.now() - started).toFixed(1)}`)
        return response
      }
      const unread = listing.inboxUnread ?? (await inboxStats(ctx.s, [inbox.id])).get(inbox.id)?.unread ?? 0
      const page = (
        <InboxPage
          org={org}
          inbox={inbox}
          listing={listing}
          unread={unread}
          filter={filter}
          error={error}
          smtpAddress={ctx.deps.smtpAddress()}
          refused={ctx.s.refusedDeliveries.recent(inbox.id)}
        />
      )
      return renderPage(ctx, `${inbox.address} · ${org.name}`, page, {
        org,
        section: 'inboxes',
        status: error ? 400 : 200,
      })
    },
  }),
  route({
    method: 'POST',
    path: PATHS.inboxBulk,
    access: 'member',
    handler: async (ctx, { org, principal }) => {
      const inbox = await getInbox(ctx.s, principal, ctx.params.inbox)
      // Back to the view the form was on; only a query string is taken, so the redirect stays on this inbox.
      const back = ctx.field('back')
      const here = `${PATHS.inbox.link(org.organizationId, inbox.id)}${back.startsWith('?') ? back : ''}`
      const single = ctx.field('message')
      const action = single ? 'delete' : ctx.field('action')
      const ids = single ? [single] : ctx.form.getAll('selected').slice(0, BULK_MAX)
      if (!['read', 'unread', 'delete'].includes(action))
        throw new Refusal('invalid', 'Choose Mark read, Mark unread or Delete selected.')
      // Only messages of this inbox: the ids are the client's to change.
      const owned = await messagesOfInbox(ctx.s, principal, inbox.id, ids)
      if (single && owned.length === 0) throw new Refusal('not_found', 'Not found.')
      if (action === 'delete') for (const id of owned) await deleteMessage(ctx.s, principal, id)
      else await markMessagesRead(ctx.s, principal, owned, action === 'read')
      return redirect(here)
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
        const listed = (await listOrWaitForMessages(ctx.s, principal, {
          inboxId: inbox.id,
          query: { limit: 100, includeContent: false },
          waitSeconds: 0,
          signal: ctx.request.signal,
        }))!
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
      if (ctx.request.method === 'HEAD')
        return new Response(null, { headers: { 'content-type': 'text/event-stream; charset=utf-8' } })
      const access = {
        userId: user.id,
        organizationId: org.organizationId,
        stillAllowed: () =>
          sessionStillReads(ctx.s, { tokenSha256: session.tokenSha256, organizationId: org.organizationId }),
      }
      const stream = await ctx.deps.streams.stream(ctx.s, ctx.request.signal, access, inbox.id)
      // Between two keep-alive lines a stream is silent longer than HTTP_IDLE_TIMEOUT_SECONDS may allow.
      ctx.deps.connections.holdOpen(ctx.request, STREAM_SILENCE_SECONDS)
      return stream
    },
  }),
]
