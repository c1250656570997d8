import { Elysia, t, type Static } from 'elysia'
import type { Principal } from '../../core/api-keys/authenticate.ts'
import { DomainError } from '../../core/common/errors.ts'
import { deleteMessage, getMessage } from '../../core/messages/get-message.ts'
import { parseRfc3339, type MessageQuery } from '../../core/messages/list-messages.ts'
import { listOrWaitForMessages } from '../../core/messages/list-or-wait.ts'
import { MessageModel } from '../../core/common/models.ts'
import type { Services } from '../../core/common/services.ts'
import type { ConnectionTimeouts } from '../../web/connection-timeouts.ts'
import type { RequestRegistry } from '../request-registry.ts'
import { listSummariesAsJson } from '../../core/messages/page-cache.ts'
import { errorResponses, single } from '../openapi/envelopes.ts'
import { CursorQuery, LimitQuery, pageSize, queryObject } from '../query.ts'

const MessagesQuery = queryObject({
  wait_seconds: t.Optional(
    t.String({
      pattern: '^0*(?:[0-9]|[1-9][0-9]|1[0-7][0-9]|180)$',
      description: '0 to 180; > 0 long-polls until a match or timeout (then 204).',
    }),
  ),
  limit: LimitQuery,
  cursor: CursorQuery,
  subject: t.Optional(t.String({ description: 'Case-insensitive substring of the subject.' })),
  sender: t.Optional(
    t.String({
      pattern: '^[^\\s@]+@[^\\s@]+$',
      maxLength: 320,
      description: 'Exact sender address, case-insensitive.',
    }),
  ),
  sender_domain: t.Optional(
    t.String({
      pattern: '^[^\\s@]+$',
      maxLength: 255,
      description: 'Exact sender domain without @, case-insensitive.',
    }),
  ),
  received_after: t.Optional(
    t.String({
      pattern: '^\\d{4}-\\d{2}-\\d{2}[Tt ]\\d{2}:\\d{2}:\\d{2}(?:\\.\\d{1,9})?(?:[Zz]|[+-]\\d{2}:\\d{2})$',
      description: 'RFC 3339; messages at or after it.',
    }),
  ),
  include: t.Optional(t.Literal('content', { description: 'Adds content fields; requires limit=1.' })),
})

/** The validated query string as the domain's query, plus the wait. */
function readQuery(query: Static<typeof MessagesQuery>): { messageQuery: MessageQuery; waitSeconds: number } {
  let receivedAfter: number | undefined
  if (query.received_after !== undefined) {
    receivedAfter = parseRfc3339(query.received_after) ?? undefined
    if (receivedAfter === undefined)
      throw new DomainError(
        'invalid_received_after',
        'received_after must be an RFC 3339 timestamp, e.g. 2026-11-22T10:00:00Z.',
      )
  }
  return {
    messageQuery: {
      limit: pageSize(query.limit),
      cursor: query.cursor,
      subject: query.subject,
      sender: query.sender,
      senderDomain: query.sender_domain,
      receivedAfter,
      includeContent: query.include === 'content',
    },
    waitSeconds: query.wait_seconds === undefined ? 0 : Number(query.wait_seconds),
  }
}

/** A waiting poll's connection stays open this long past its wait, for the answer to go out. */
const LONG_POLL_SLACK_SECONDS = 10

/**
 * The page with content, or a long poll (`nothingArrived` when the wait ends empty), whose connection
 * may stay silent for the wait and is given back to the idle timeout once answered.
 * Elysia guesses from a handler's source text whether to await what it returns inside its
 * error handling; some shapes of this code let a rejection (an unknown inbox's 404) escape as
 * a bare 500, so the 404 of both paths is tested from source and from the bundle. An async
 * handler would be awaited for sure, but costs the summaries path about a tenth of its
 * throughput, so the handler stays synchronous.
 */
async function listWithContentOrWait(
  s: Services,
  connections: ConnectionTimeouts,
  request: Request,
  principal: Principal,
  inboxId: string,
  messageQuery: MessageQuery,
  waitSeconds: number,
  nothingArrived: () => unknown,
): Promise<unknown> {
  if (waitSeconds === 0)
    return listOrWaitForMessages(s, principal, { inboxId, query: messageQuery, waitSeconds, signal: request.signal })
  connections.holdOpen(request, waitSeconds + LONG_POLL_SLACK_SECONDS)
  try {
    return (
      (await listOrWaitForMessages(s, principal, {
        inboxId,
        query: messageQuery,
        waitSeconds,
        signal: request.signal,
      })) ?? nothingArrived()
    )
  } finally {
    connections.release(request)
  }
}

export const messageRoutes = (s: Services, requests: RequestRegistry, connections: ConnectionTimeouts) =>
  new Elysia()
    .get(
      '/v1/inboxes/:inbox_id/messages',
      async ({ request, params, query, status }) => {
        const { messageQuery, waitSeconds } = readQuery(query)
        const principal = requests.principal(request)
        if (waitSeconds === 0 && !messageQuery.includeContent) {
          // The common repeat-poll (no wait, summaries), from serialized pages while they are current.
          const body = await listSummariesAsJson(s, principal, { inboxId: params.inbox_id, query: messageQuery })
          return new Response(body, { headers: { 'content-type': 'application/json;charset=utf-8' } })
        }
        return listWithContentOrWait(
          s,
          connections,
          request,
          principal,
          params.inbox_id,
          messageQuery,
          waitSeconds,
          () => status(204, undefined),
        )
      },
      {
        query: MessagesQuery,
        // No response schema: this route also answers with pre-serialized pages. Its items come
        // from the same presenters that getMessage validates.
      },
    )
    .get(
      '/v1/messages/:message_id',
      async ({ request, params }) => ({ data: await getMessage(s, requests.principal(request), params.message_id) }),
      {
        response: { 200: single(MessageModel), ...errorResponses(401, 404, 429) },
      },
    )
    .delete(
      '/v1/messages/:message_id',
      async ({ request, params, status }) => {
        await deleteMessage(s, requests.principal(request), params.message_id)
        return status(204, undefined)
      },
      {
        response: { 204: t.Void(), ...errorResponses(401, 404, 429) },
      },
    )
