/**
 * One live stream per browser. Each inbox page used to hold its own event stream, and a
 * browser opens at most six HTTP/1.1 connections to a host, so a seventh open inbox tab
 * (and every other console page) stopped loading. Now the pages of one browser share a
 * SharedWorker (assets/live-worker.js) that holds a single stream for all the inboxes its
 * tabs show, `GET /console/live?watch=<org>:<inbox>&watch=...`, and hands each tab the
 * events of its inbox. (Where SharedWorker is missing, a page streams its own inbox and
 * closes that stream while the tab is hidden.)
 *
 * The route itself is for signed-in users; each watched inbox is then checked as a member
 * route would be (membership of its organisation, resolved by access.ts), then as an active
 * inbox of that organisation. One that fails (deleted meanwhile, or never
 * visible to this user) is answered with an `inbox_deleted` event for that key, the same
 * for an unknown id and another organisation's, so nothing is revealed.
 */
import { Refusal } from '../../core/common/refusals.ts'
import { sessionStillReads } from '../../core/sessions/sessions.ts'
import { findActiveInbox } from '../../core/inboxes/find-inbox.ts'
import { DomainError } from '../../core/common/errors.ts'
import { STREAM_SILENCE_SECONDS } from '../live-streams.ts'
import { memberOf } from '../access.ts'
import { hasControlCharacter, PATHS } from '../paths.ts'
import { route, type Route } from '../router.ts'

/** More inbox tabs than this in one browser share no stream beyond these (the rest reload to see mail). */
export const MAX_WATCHED_INBOXES = 50

const encoder = new TextEncoder()

export const liveRoutes: Route[] = [
  route({
    method: 'GET',
    path: PATHS.live,
    access: 'signed-in',
    handler: async (ctx, { user, session }) => {
      const keys = [...new Set(ctx.url.searchParams.getAll('watch'))]
      if (keys.length === 0 || keys.length > MAX_WATCHED_INBOXES)
        throw new Refusal('invalid', `Watch between 1 and ${MAX_WATCHED_INBOXES} inboxes.`)
      const watched: string[] = []
      const gone: string[] = []
      let organizationId: string | undefined
      const organizations = new Set<string>()
      for (const key of keys) {
        const [org = '', inbox = ''] = key.split(':')
        if (hasControlCharacter(key)) {
          gone.push(inbox)
          continue
        }
        try {
          const member = await memberOf(ctx, org)
          watched.push((await findActiveInbox(ctx.s, member.principal, inbox)).id)
          organizationId ??= member.org.organizationId
          organizations.add(member.org.organizationId)
        } catch (error) {
          if (!(error instanceof Refusal || error instanceof DomainError)) throw error
          gone.push(inbox)
        }
      }
      const headers = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store' }
      // A HEAD has no body to stream; it must not hold a slot.
      if (ctx.request.method === 'HEAD') return new Response(null, { headers })
      if (watched.length === 0) {
        // Nothing left to watch: say so once and end (retry in 10 minutes, in case it is left open).
        const body = gone.map((id) => `event: inbox_deleted\ndata: ${id}\n\n`).join('')
        return new Response(`retry: 600000\n${body}`, { headers })
      }
      // The stream counts against the person's and the (first) organisation's bounds.
      // It ends when the session ends or any of its memberships does; the worker reconnects,
      // and the new stream reports the inboxes no longer visible as gone.
      const stillAllowed = async () =>
        (
          await Promise.all(
            [...organizations].map((id) =>
              sessionStillReads(ctx.s, { tokenSha256: session.tokenSha256, organizationId: id }),
            ),
          )
        ).every(Boolean)
      const stream = await ctx.deps.streams.stream(
        ctx.s,
        ctx.request.signal,
        { userId: user.id, organizationId: organizationId!, stillAllowed },
        watched,
      )
      ctx.deps.connections.holdOpen(ctx.request, STREAM_SILENCE_SECONDS)
      if (gone.length === 0) return stream
      // Tell the pages of inboxes that are gone, ahead of the live events.
      const prefix = encoder.encode(gone.map((id) => `event: inbox_deleted\ndata: ${id}\n\n`).join(''))
      const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>({
        start: (controller) => controller.enqueue(prefix),
      })
      void stream.body!.pipeTo(writable).catch(() => {})
      return new Response(readable, { headers: stream.headers })
    },
  }),
]
