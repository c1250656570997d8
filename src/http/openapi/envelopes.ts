/**
 * The HTTP-only schemas: the envelopes around the resource models of src/core/common/models.ts,
 * the error envelope, and the health and createInbox body schemas. Routes validate their
 * answers with them, and the OpenAPI document (document.ts) names them as components.
 */
import { Type as T, type TSchema } from '@sinclair/typebox'

export const ErrorModel = T.Object(
  {
    error: T.Object({ code: T.String(), message: T.String(), request_id: T.String() }, { additionalProperties: false }),
  },
  { additionalProperties: false },
)

export const HealthModel = T.Object(
  { status: T.Literal('ok'), service: T.Literal('pigeonhole') },
  { additionalProperties: false },
)

/** createInbox body: documented here, checked by hand in core/inboxes (the spec's error codes need it). */
export const CreateInboxBodyModel = T.Object(
  {
    prefix: T.Optional(
      T.String({ minLength: 3, maxLength: 40, pattern: '^[a-zA-Z0-9](?:[a-zA-Z0-9-]{1,38})[a-zA-Z0-9]$' }),
    ),
  },
  { additionalProperties: false },
)

export const page = <S extends TSchema>(item: S) =>
  T.Object({ data: T.Array(item), next_cursor: T.Union([T.String(), T.Null()]) }, { additionalProperties: false })
export const single = <S extends TSchema>(item: S) => T.Object({ data: item }, { additionalProperties: false })

/** `response` entries for the error statuses a route documents, all with the error envelope. */
export const errorResponses = (...statuses: number[]): Record<number, typeof ErrorModel> =>
  Object.fromEntries(statuses.map((status) => [status, ErrorModel]))
