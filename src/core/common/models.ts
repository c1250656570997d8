/**
 * Response models of the public interface, one TypeBox schema per resource. They are the
 * single source for the OpenAPI document and the TypeScript types that domain code
 * returns and tests read. (Plain TypeBox: the domain does not import the HTTP framework;
 * the envelopes and the other OpenAPI pieces are in src/http/openapi/.)
 */
import { Type as T, type Static } from '@sinclair/typebox'

const Timestamp = T.String({ format: 'date-time', examples: ['2026-11-22T10:15:30.123Z'] })

export const InboxModel = T.Object(
  {
    id: T.String({ pattern: '^inbox_[0-9a-f]{32}$' }),
    address: T.String({ description: '<local_part>@RECEIVING_DOMAIN' }),
    local_part: T.String({ minLength: 3, maxLength: 40 }),
    status: T.Literal('active'),
    created_at: Timestamp,
  },
  { additionalProperties: false },
)
export type Inbox = Static<typeof InboxModel>

export const AttachmentModel = T.Object(
  {
    id: T.String({ pattern: '^att_[0-9a-f]{32}$' }),
    filename: T.String(),
    content_type: T.String(),
    size_bytes: T.Integer(),
    disposition: T.Union([T.Literal('attachment'), T.Literal('inline')]),
    content_id: T.Union([T.String(), T.Null()]),
    download_url: T.String({ format: 'uri' }),
  },
  { additionalProperties: false },
)
export type Attachment = Static<typeof AttachmentModel>

const messageSummaryFields = {
  id: T.String({ pattern: '^msg_[0-9a-f]{32}$' }),
  inbox_id: T.String({ pattern: '^inbox_[0-9a-f]{32}$' }),
  from: T.Object({ name: T.String(), address: T.String() }, { additionalProperties: false }),
  to: T.String({ description: 'The receiving inbox address.' }),
  subject: T.String(),
  preview: T.String(),
  size_bytes: T.Integer(),
  received_at: Timestamp,
  expires_at: Timestamp,
}
const contentFields = {
  internet_message_id: T.Union([T.String(), T.Null()]),
  text: T.Union([T.String(), T.Null()]),
  html: T.Union([T.String(), T.Null()]),
  headers: T.Array(T.Tuple([T.String(), T.String()])),
  attachments: T.Array(AttachmentModel),
}

export const MessageSummaryModel = T.Object(messageSummaryFields, { additionalProperties: false })
export type MessageSummary = Static<typeof MessageSummaryModel>
export const MessageModel = T.Object({ ...messageSummaryFields, ...contentFields }, { additionalProperties: false })
export type Message = Static<typeof MessageModel>

export const UsageModel = T.Object(
  {
    plan: T.Literal('free'),
    period: T.Object({ starts_at: Timestamp, ends_at: Timestamp }, { additionalProperties: false }),
    inboxes: T.Object(
      { active: T.Integer(), limit: T.Integer(), remaining: T.Integer() },
      { additionalProperties: false },
    ),
    emails: T.Object(
      { received: T.Integer(), limit: T.Integer(), remaining: T.Integer() },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
)
export type Usage = Static<typeof UsageModel>
