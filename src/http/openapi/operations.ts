/**
 * The ten public operations as OpenAPI operation objects: parameters typed as what they
 * mean (integers are integers here, although the server reads the raw strings so that an
 * invalid value answers its own 422 code), and every status with the error codes it carries.
 */
import type { ErrorCode } from '../../core/common/errors.ts'
import { ERROR_MEANINGS } from './error-codes.ts'

type Json = Record<string, unknown>
type Errors = Partial<Record<number, ErrorCode[]>>

const schema = (name: string) => ({ $ref: `#/components/schemas/${name}` })
const json = (name: string) => ({ 'application/json': { schema: schema(name) } })
const requestIdHeader = { 'X-Request-Id': { $ref: '#/components/headers/XRequestId' } }
const retryAfter = {
  'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer', minimum: 0 } },
}

// internal_error is here because a read-only or failing volume answers it with a retry hint
// on the operations whose statuses in the interface have no 503.
const RETRY_CODES = new Set<ErrorCode>([
  'rate_limit_exceeded',
  'idempotency_in_progress',
  'insufficient_storage',
  'storage_unavailable',
  'internal_error',
])

/** One response per error status, listing its codes in the description and as examples. */
function errorResponses(errors: Errors): Record<string, Json> {
  const all: Errors = { 401: ['invalid_api_key'], ...errors, 500: ['internal_error'] }
  const out: Record<string, Json> = {}
  for (const [status, codes] of Object.entries(all)) {
    const retry = codes!.some((code) => RETRY_CODES.has(code))
    out[status] = {
      description: codes!.map((code) => `\`${code}\`: ${ERROR_MEANINGS[code]}`).join('\n\n'),
      headers: retry ? { ...requestIdHeader, ...retryAfter } : requestIdHeader,
      content: {
        'application/json': {
          schema: schema('Error'),
          examples: Object.fromEntries(
            codes!.map((code) => [
              code,
              { value: { error: { code, message: ERROR_MEANINGS[code], request_id: 'req_0123456789abcdef' } } },
            ]),
          ),
        },
      },
    }
  }
  return out
}

const ok = (description: string, content?: Json, headers: Json = {}) => ({
  description,
  headers: { ...requestIdHeader, ...headers },
  ...(content ? { content } : {}),
})
const idParameter = (name: string, prefix: string) => ({
  name,
  in: 'path',
  required: true,
  schema: { type: 'string', pattern: `^${prefix}_[0-9a-f]{32}$` },
})
const query = (name: string, description: string, schema: Json) => ({
  name,
  in: 'query',
  required: false,
  description,
  schema,
})
const limit = query('limit', 'Page size.', { type: 'integer', minimum: 1, maximum: 100, default: 50 })
const cursor = query('cursor', 'The `next_cursor` of the previous page.', { type: 'string' })
const limited = ['rate_limit_exceeded'] as ErrorCode[]

export const OPERATIONS: Array<{ method: string; path: string; operation: Json }> = [
  {
    method: 'get',
    path: '/health',
    operation: {
      operationId: 'getHealth',
      tags: ['health'],
      summary: 'Liveness (no key needed)',
      security: [],
      responses: { 200: ok('Alive, and the database answers.', json('Health')), 500: errorResponses({})['500'] },
    },
  },
  {
    method: 'post',
    path: '/v1/inboxes',
    operation: {
      operationId: 'createInbox',
      tags: ['inboxes'],
      summary: 'Create an inbox (and its routing rule)',
      parameters: [
        {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          description: 'Makes retries safe: the same key and body answer the first 201 for 24 hours.',
          schema: { type: 'string', minLength: 8, maxLength: 200 },
        },
      ],
      requestBody: { required: false, content: json('CreateInboxRequest') },
      responses: {
        201: ok('The new inbox (or the replay of an idempotent create).', json('InboxResponse'), {
          'Idempotent-Replayed': {
            description: '`true` when this is a replayed answer.',
            schema: { type: 'string', const: 'true' },
          },
        }),
        ...errorResponses({
          409: ['idempotency_key_reused', 'idempotency_in_progress', 'inbox_quota_exceeded', 'address_unavailable'],
          422: ['invalid_json', 'unknown_property', 'invalid_prefix', 'invalid_idempotency_key'],
          429: limited,
          502: ['email_routing_unavailable'],
          503: [
            'address_generation_failed',
            'idempotency_unavailable',
            'email_routing_unavailable',
            'insufficient_storage',
            'storage_unavailable',
          ],
        }),
      },
    },
  },
  {
    method: 'get',
    path: '/v1/inboxes',
    operation: {
      operationId: 'listInboxes',
      tags: ['inboxes'],
      summary: 'Active inboxes, newest first',
      parameters: [limit, cursor],
      responses: {
        200: ok('One page of inboxes.', json('InboxPage')),
        ...errorResponses({ 422: ['invalid_limit', 'invalid_cursor'], 429: limited }),
      },
    },
  },
  {
    method: 'get',
    path: '/v1/inboxes/{inbox_id}',
    operation: {
      operationId: 'getInbox',
      tags: ['inboxes'],
      summary: 'One inbox',
      parameters: [idParameter('inbox_id', 'inbox')],
      responses: {
        200: ok('The inbox.', json('InboxResponse')),
        ...errorResponses({ 404: ['inbox_not_found'], 429: limited }),
      },
    },
  },
  {
    method: 'delete',
    path: '/v1/inboxes/{inbox_id}',
    operation: {
      operationId: 'deleteInbox',
      tags: ['inboxes'],
      summary: 'Delete an inbox, its routing rule and its messages',
      description: 'Frees an active-inbox slot. The monthly email count is not given back.',
      parameters: [idParameter('inbox_id', 'inbox')],
      responses: {
        204: ok('Deleted (empty body).'),
        ...errorResponses({
          404: ['inbox_not_found'],
          429: limited,
          502: ['email_routing_unavailable'],
          503: ['email_routing_unavailable', 'storage_unavailable'],
        }),
      },
    },
  },
  {
    method: 'get',
    path: '/v1/inboxes/{inbox_id}/messages',
    operation: {
      operationId: 'listOrWaitForMessages',
      tags: ['messages'],
      summary: 'List, or wait for, messages of an inbox (newest first)',
      description:
        'With `wait_seconds` > 0 and no matching message, the request waits until one ' +
        'is stored or the time is up (then 204, empty body). Filters combine with AND.',
      parameters: [
        idParameter('inbox_id', 'inbox'),
        query('wait_seconds', 'Seconds to wait for a match; 0 answers at once.', {
          type: 'integer',
          minimum: 0,
          maximum: 180,
          default: 0,
        }),
        limit,
        cursor,
        query('subject', 'Case-insensitive substring of the subject.', { type: 'string' }),
        query('sender', 'Exact sender address, case-insensitive.', { type: 'string', format: 'email' }),
        query('sender_domain', 'Exact sender domain without `@`, case-insensitive.', { type: 'string' }),
        query('received_after', 'Only messages received at or after this instant (inclusive).', {
          type: 'string',
          format: 'date-time',
        }),
        query('include', 'Adds the content fields to each item; needs `limit=1`.', {
          type: 'string',
          enum: ['content'],
        }),
      ],
      responses: {
        200: ok(
          'Matching messages: a `MessageSummaryPage`, or with `include=content` ' +
            'a `MessageContentPage` (its one item has every content field).',
          json('MessagePage'),
        ),
        204: ok('The wait ended with no match (empty body).'),
        ...errorResponses({
          404: ['inbox_not_found'],
          422: [
            'invalid_wait_seconds',
            'invalid_limit',
            'invalid_cursor',
            'invalid_sender',
            'invalid_sender_domain',
            'invalid_received_after',
            'invalid_include',
            'invalid_subject',
          ],
          429: ['rate_limit_exceeded', 'long_poll_limit_exceeded'],
        }),
      },
    },
  },
  {
    method: 'get',
    path: '/v1/messages/{message_id}',
    operation: {
      operationId: 'getMessage',
      tags: ['messages'],
      summary: 'One message with all content fields',
      parameters: [idParameter('message_id', 'msg')],
      responses: {
        200: ok('The message.', json('MessageResponse')),
        ...errorResponses({ 404: ['message_not_found'], 429: limited }),
      },
    },
  },
  {
    method: 'delete',
    path: '/v1/messages/{message_id}',
    operation: {
      operationId: 'deleteMessage',
      tags: ['messages'],
      summary: 'Delete a message and its stored bytes',
      parameters: [idParameter('message_id', 'msg')],
      responses: { 204: ok('Deleted (empty body).'), ...errorResponses({ 404: ['message_not_found'], 429: limited }) },
    },
  },
  {
    method: 'get',
    path: '/v1/attachments/{attachment_id}',
    operation: {
      operationId: 'downloadAttachment',
      tags: ['attachments'],
      summary: 'The raw bytes of an attachment',
      description:
        'The `Content-Type` header is the stored MIME type. The bytes are not scanned: treat them as untrusted.',
      parameters: [idParameter('attachment_id', 'att')],
      responses: {
        200: ok(
          'The bytes as the sender encoded them.',
          { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
          {
            'Content-Disposition': {
              description: '`attachment`, with the file name (RFC 6266).',
              schema: { type: 'string' },
            },
            'Cache-Control': {
              description: 'Always `private, no-store`.',
              schema: { type: 'string', const: 'private, no-store' },
            },
          },
        ),
        ...errorResponses({ 404: ['attachment_not_found'], 429: limited }),
      },
    },
  },
  {
    method: 'get',
    path: '/v1/usage',
    operation: {
      operationId: 'getUsage',
      tags: ['usage'],
      summary: 'Limits of the organisation and what it used this UTC month',
      responses: { 200: ok('Usage (no `data` wrapper).', json('Usage')), ...errorResponses({ 429: limited }) },
    },
  },
]
