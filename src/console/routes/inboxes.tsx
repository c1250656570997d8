/** @jsxImportSource preact */
/**
 * The mail viewer's inbox pages: list, create (optional prefix), delete, one inbox's
 * messages, and its event stream. Every handler checks membership first, then calls the
 * same domain verbs as /v1 as the organisation, so ids of another organisation are 404.
 */
import type { ConsoleError } from '../../core/console/errors.ts'
import { consolePrincipal, organizationWithLimits, type Membership } from '../../core/console/organizations.ts'
import { DomainError } from '../../core/errors.ts'
import { createInbox } from '../../core/inboxes/create-inbox.ts'
import { deleteInbox } from '../../core/inboxes/delete-inbox.ts'
import { findActiveInbox } from '../../core/inboxes/find-inbox.ts'
import { getInbox } from '../../core/inboxes/get-inbox.ts'
import { listInboxes } from '../../core/inboxes/list-inboxes.ts'
import { listOrWaitForMessages } from '../../core/messages/list-or-wait.ts'
import { getUsage } from '../../core/usage.ts'
import { STREAM_SILENCE_SECONDS } from '../live-streams.ts'
import { redirect, type ConsoleRequest } from '../context.ts'
import { asConsoleError } from '../domain-errors.ts'
import { InboxesPage, InboxPage, inboxPath } from '../pages/inboxes.tsx'
import { orgPath } from '../pages/shell.tsx'
import { renderPage } from '../render.tsx'
import type { Route } from '../router.ts'

/** The inbox list shows this many (the API's page limit); the rest stay reachable over /v1. */
const INBOXES_SHOWN = 100
const MESSAGES_SHOWN = 100

/** The organisation as a Principal for the domain verbs, with its own limits. */
export function principalFor(ctx: ConsoleRequest, org: Membership) {
  return consolePrincipal(org.organizationId, organizationWithLimits(ctx.s.storage.db, ctx.s.config.limits, org.organizationId).limits)
}

function inboxesPage(ctx: ConsoleRequest, org: Membership, error?: { status: number; message: string }): Response {
  const principal = principalFor(ctx, org)
  const page = (
    <InboxesPage
      org={org}
      inboxes={listInboxes(ctx.s, principal, { limit: INBOXES_SHOWN }).data}
      usage={getUsage(ctx.s, principal)}
      receivingDomain={ctx.s.config.receivingDomain}
      error={error?.message}
    />
  )
  return renderPage(ctx, `Inboxes · ${org.name}`, page, { org, section: 'inboxes', status: error?.status })
}

export const inboxRoutes: Route[] = [
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
      const query = { limit: MESSAGES_SHOWN, includeContent: false }
      const listed = (await listOrWaitForMessages(ctx.s, principal, inbox.id, query, { waitSeconds: 0, signal: ctx.request.signal }))!
      const page = <InboxPage org={org} inbox={inbox} messages={listed.data} more={listed.next_cursor !== null} smtpAddress={ctx.deps.smtpAddress} refused={ctx.s.refusedDeliveries.recent(inbox.id)} />
      return renderPage(ctx, `${inbox.address} · ${org.name}`, page, { org, section: 'inboxes' })
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
      const stream = ctx.deps.streams.stream(ctx.s, ctx.request.signal, { userId: ctx.requireUser().id, organizationId: org.organizationId }, inbox.id)
      // Between two keep-alive lines a stream is silent longer than HTTP_IDLE_TIMEOUT_SECONDS may allow.
      ctx.deps.connections.holdOpen(ctx.request, STREAM_SILENCE_SECONDS)
      return stream
    },
  },
]
