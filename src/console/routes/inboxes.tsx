/** @jsxImportSource preact */
/**
 * The mail viewer's inbox pages: list, create (optional prefix), delete, one inbox's
 * messages, and its event stream. Every handler checks membership first, then calls the
 * same domain verbs as /v1 as the organisation, so ids of another organisation are 404.
 */
import { consolePrincipal, organizationWithLimits, type Membership } from '../../core/console/organizations.ts'
import { sessionStillReads } from '../../core/console/sessions.ts'
import { DomainError } from '../../core/errors.ts'
import { createInbox } from '../../core/inboxes/create-inbox.ts'
import { deleteInbox } from '../../core/inboxes/delete-inbox.ts'
import { findActiveInbox } from '../../core/inboxes/find-inbox.ts'
import { getInbox } from '../../core/inboxes/get-inbox.ts'
import { listInboxes } from '../../core/inboxes/list-inboxes.ts'
import { listOrWaitForMessages } from '../../core/messages/list-or-wait.ts'
import { deleteMessage, getMessage } from '../../core/messages/get-message.ts'
import { ConsoleError } from '../../core/console/errors.ts'
import { inboxStats } from '../../core/inboxes/inbox-stats.ts'
import { isFiltered, readInboxFilter, toMessageQuery } from '../inbox-filter.ts'
import { searchOrganization } from '../../core/messages/search-organization.ts'
import type { MessageQuery } from '../../core/messages/list-messages.ts'
import { SearchPage } from '../pages/search.tsx'
import { getUsage } from '../../core/usage.ts'
import { STREAM_SILENCE_SECONDS } from '../live-streams.ts'
import { redirect, type ConsoleRequest } from '../context.ts'
import { asConsoleError } from '../domain-errors.ts'
import { InboxesPage, InboxPage, inboxPath } from '../pages/inboxes.tsx'
import { orgPath } from '../pages/shell.tsx'
import { renderPage } from '../render.tsx'
import type { Route } from '../router.ts'

/** Inboxes a page of the list shows: 50 rows keep the page under its 50 KB budget. */
const INBOXES_SHOWN = 50
/** Messages a page of the inbox shows: 50 rows keep the page under its 50 KB budget with full previews. */
export const MESSAGES_SHOWN = 50
/** "Empty this inbox" deletes at most this many pages of 100 per click (the page says when some are left). */
const EMPTY_ROUNDS = 50

/** The organisation as a Principal for the domain verbs, with its own limits. */
export function principalFor(ctx: ConsoleRequest, org: Membership) {
  return consolePrincipal(org.organizationId, organizationWithLimits(ctx.s.storage.db, ctx.s.config.limits, org.organizationId).limits)
}

function inboxesPage(ctx: ConsoleRequest, org: Membership, error?: { status: number; message: string }): Response {
  const principal = principalFor(ctx, org)
  const cursor = ctx.url.searchParams.get('cursor') || undefined
  const listing = listInboxes(ctx.s, principal, { limit: INBOXES_SHOWN, cursor })
  const page = (
    <InboxesPage
      org={org}
      listing={listing}
      stats={inboxStats(
        ctx.s,
        listing.data.map((inbox) => inbox.id),
      )}
      usage={getUsage(ctx.s, principal)}
      receivingDomain={ctx.s.config.receivingDomain}
      error={error?.message}
    />
  )
  return renderPage(ctx, `Inboxes · ${org.name}`, page, { org, section: 'inboxes', status: error?.status })
}

/** Matches a search shows. */
const SEARCH_RESULTS = 50

export const inboxRoutes: Route[] = [
  {
    method: 'GET',
    path: '/console/orgs/:org/search',
    handler: (ctx) => {
      const org = ctx.requireMember(ctx.params.org!)
      const filter = { ...readInboxFilter(ctx.url), cursor: '' }
      const query = toMessageQuery(filter, SEARCH_RESULTS)
      const error = 'error' in query ? query.error : undefined
      const results = error || !isFiltered(filter) ? null : searchOrganization(ctx.s, principalFor(ctx, org), query as MessageQuery, SEARCH_RESULTS)
      const page = <SearchPage org={org} filter={filter} results={results} limit={SEARCH_RESULTS} error={error} />
      return renderPage(ctx, `Search · ${org.name}`, page, { org, section: 'inboxes', status: error ? 400 : 200 })
    },
  },
  {
    method: 'GET',
    path: '/console/orgs/:org/inboxes',
    handler: (ctx) => inboxesPage(ctx, ctx.requireMember(ctx.params.org!)),
  },
  {
    method: 'POST',
    path: '/console/orgs/:org/inboxes',
    handler: async (ctx) => {
      const org = ctx.requireMember(ctx.params.org!)
      const prefix = ctx.field('prefix').trim()
      try {
        const created = await createInbox(ctx.s, principalFor(ctx, org), { body: prefix ? JSON.stringify({ prefix }) : '', idempotencyKey: null })
        return redirect(inboxPath(org.organizationId, created.body.data.id))
      } catch (error) {
        if (!(error instanceof DomainError)) throw error
        // Shown on the form it came from: a taken address, a bad prefix, the quota.
        const refusal = asConsoleError(error) as ConsoleError
        return inboxesPage(ctx, org, { status: refusal.kind === 'invalid' ? 400 : 409, message: refusal.message })
      }
    },
  },
  {
    method: 'GET',
    path: '/console/orgs/:org/inboxes/:inbox',
    handler: async (ctx) => {
      const org = ctx.requireMember(ctx.params.org!)
      const principal = principalFor(ctx, org)
      const inbox = getInbox(ctx.s, principal, ctx.params.inbox!)
      const filter = readInboxFilter(ctx.url)
      const query = toMessageQuery(filter, MESSAGES_SHOWN)
      const listed = 'error' in query ? { data: [], next_cursor: null } : (await listOrWaitForMessages(ctx.s, principal, inbox.id, query, { waitSeconds: 0, signal: ctx.request.signal }))!
      const error = 'error' in query ? query.error : undefined
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
  },
  {
    method: 'POST',
    path: '/console/orgs/:org/inboxes/:inbox/delete-message',
    handler: (ctx) => {
      const org = ctx.requireMember(ctx.params.org!)
      const principal = principalFor(ctx, org)
      const inbox = getInbox(ctx.s, principal, ctx.params.inbox!)
      const message = getMessage(ctx.s, principal, ctx.field('message'))
      // The message must be of this inbox: the button's value is the client's to change.
      if (message.inbox_id !== inbox.id) throw new ConsoleError('not_found', 'Not found.')
      deleteMessage(ctx.s, principal, message.id)
      return redirect(`${inboxPath(org.organizationId, inbox.id)}${ctx.url.search}`)
    },
  },
  {
    method: 'POST',
    path: '/console/orgs/:org/inboxes/:inbox/empty',
    handler: async (ctx) => {
      const org = ctx.requireMember(ctx.params.org!)
      const principal = principalFor(ctx, org)
      const inbox = getInbox(ctx.s, principal, ctx.params.inbox!)
      // Page by page through the API's own verbs; bounded, so one click cannot hold the writer for long.
      for (let round = 0; round < EMPTY_ROUNDS; round++) {
        const listed = (await listOrWaitForMessages(ctx.s, principal, inbox.id, { limit: 100, includeContent: false }, { waitSeconds: 0, signal: ctx.request.signal }))!
        for (const message of listed.data) deleteMessage(ctx.s, principal, message.id)
        if (listed.next_cursor === null) break
      }
      return redirect(inboxPath(org.organizationId, inbox.id))
    },
  },
  {
    method: 'POST',
    path: '/console/orgs/:org/inboxes/delete-inbox',
    handler: async (ctx) => {
      const org = ctx.requireMember(ctx.params.org!)
      await deleteInbox(ctx.s, principalFor(ctx, org), ctx.field('inbox'))
      return redirect(orgPath(org.organizationId, '/inboxes'))
    },
  },
  {
    method: 'POST',
    path: '/console/orgs/:org/inboxes/:inbox/delete',
    handler: async (ctx) => {
      const org = ctx.requireMember(ctx.params.org!)
      await deleteInbox(ctx.s, principalFor(ctx, org), ctx.params.inbox!)
      return redirect(orgPath(org.organizationId, '/inboxes'))
    },
  },
  {
    method: 'GET',
    path: '/console/orgs/:org/inboxes/:inbox/events',
    handler: (ctx) => {
      const org = ctx.requireMember(ctx.params.org!)
      const inbox = findActiveInbox(ctx.s.storage.db, principalFor(ctx, org), ctx.params.inbox!)
      // A HEAD has no body to stream; it must not hold a slot.
      if (ctx.request.method === 'HEAD') return new Response(null, { headers: { 'content-type': 'text/event-stream; charset=utf-8' } })
      const session = ctx.session!.tokenSha256
      const access = { userId: ctx.requireUser().id, organizationId: org.organizationId, stillAllowed: () => sessionStillReads(ctx.s, session, org.organizationId) }
      const stream = ctx.deps.streams.stream(ctx.s, ctx.request.signal, access, inbox.id)
      // Between two keep-alive lines a stream is silent longer than HTTP_IDLE_TIMEOUT_SECONDS may allow.
      ctx.deps.connections.holdOpen(ctx.request, STREAM_SILENCE_SECONDS)
      return stream
    },
  },
]
