import { Elysia, t } from 'elysia'
import { createInbox, MAX_CREATE_BODY_BYTES } from '../../core/inboxes/create-inbox.ts'
import { deleteInbox } from '../../core/inboxes/delete-inbox.ts'
import { getInbox } from '../../core/inboxes/get-inbox.ts'
import { listInboxes } from '../../core/inboxes/list-inboxes.ts'
import { InboxModel } from '../../core/common/models.ts'
import type { Services } from '../../core/common/services.ts'
import type { RequestRegistry } from '../request-registry.ts'
import { readBodyText } from '../../web/body.ts'
import { errorResponses, page, single } from '../openapi/envelopes.ts'
import { CursorQuery, LimitQuery, pageSize, queryObject } from '../query.ts'

export const inboxRoutes = (s: Services, requests: RequestRegistry) =>
  new Elysia()
    .post(
      '/v1/inboxes',
      async ({ request, set }) => {
        const result = await createInbox(s, requests.principal(request), {
          body: await readBodyText(request, MAX_CREATE_BODY_BYTES, s.config.httpBodyTimeoutMs),
          idempotencyKey: request.headers.get('idempotency-key'),
        })
        set.status = 201
        if (result.replayed) set.headers['idempotent-replayed'] = 'true'
        return result.body
      },
      {
        // The body is read raw: the spec's invalid_json / unknown_property / invalid_prefix
        // distinctions need more than schema validation gives: Elysia strips unknown properties
        // and coerces a non-object optional body.
        parse: 'none',
        headers: t.Object({
          'idempotency-key': t.Optional(t.String({ description: '8 to 200 characters; retained 24 hours.' })),
        }),
        response: { 201: single(InboxModel), ...errorResponses(401, 409, 422, 429, 502, 503) },
      },
    )
    .get(
      '/v1/inboxes',
      ({ request, query }) =>
        listInboxes(s, requests.principal(request), { limit: pageSize(query.limit), cursor: query.cursor }),
      {
        query: queryObject({ limit: LimitQuery, cursor: CursorQuery }),
        response: { 200: page(InboxModel), ...errorResponses(401, 422, 429) },
      },
    )
    .get(
      '/v1/inboxes/:inbox_id',
      async ({ request, params }) => ({ data: await getInbox(s, requests.principal(request), params.inbox_id) }),
      {
        response: { 200: single(InboxModel), ...errorResponses(401, 404, 429) },
      },
    )
    .delete(
      '/v1/inboxes/:inbox_id',
      async ({ request, params, status }) => {
        await deleteInbox(s, requests.principal(request), params.inbox_id)
        return status(204, undefined)
      },
      {
        response: { 204: t.Void(), ...errorResponses(401, 404, 429, 502, 503) },
      },
    )
