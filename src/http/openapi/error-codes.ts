/**
 * What each public error code means, in one sentence a client author can act on. The
 * OpenAPI document lists them per operation and status; docs/api.md explains them at length.
 */
import type { ErrorCode } from '../../core/common/errors.ts'

export const ERROR_MEANINGS: Partial<Record<ErrorCode, string>> = {
  invalid_api_key: 'The Bearer key is missing, malformed, unknown or revoked.',
  invalid_json: 'The body is not a JSON object (or is larger than the API reads).',
  unknown_property: 'The body has a property other than `prefix`.',
  invalid_prefix: 'The prefix breaks the length, character or reserved-name rules.',
  invalid_idempotency_key: 'The Idempotency-Key header is shorter than 8 or longer than 200 characters.',
  idempotency_key_reused: 'This Idempotency-Key was used before with a different body.',
  idempotency_in_progress:
    'The first request with this Idempotency-Key is still running; retry after `Retry-After` (1 s).',
  idempotency_unavailable: 'The stored result of this Idempotency-Key could not be read; send the same request again.',
  inbox_quota_exceeded: 'The organisation already has its maximum of active inboxes; delete one first.',
  address_unavailable: 'An inbox with the requested local part already exists.',
  address_generation_failed: 'No free generated address was found; retry.',
  email_routing_unavailable:
    'The routing rule of the address could not be created or removed at the routing ' +
    'provider (502: it answered with an error, 503: it could not be reached).',
  inbox_not_found: "No inbox with this id in the organisation (never existed, deleted, or another organisation's).",
  message_not_found: 'No message with this id in the organisation (never existed, deleted or expired).',
  attachment_not_found: 'No attachment with this id, or its stored bytes are gone.',
  invalid_limit: '`limit` is not an integer from 1 to 100.',
  invalid_cursor: '`cursor` is not a `next_cursor` this listing returned.',
  invalid_include: '`include` is not `content`, or `limit` is not 1 with it.',
  invalid_wait_seconds: '`wait_seconds` is not an integer from 0 to 180.',
  invalid_sender: '`sender` is not an email address.',
  invalid_sender_domain: '`sender_domain` contains `@` or whitespace.',
  invalid_received_after: '`received_after` is not an RFC 3339 timestamp.',
  invalid_subject:
    "`subject` was given more than once (not in the interface's table; a well-formed request never sees it).",
  insufficient_storage:
    'The server is low on disk space and creates no inboxes until space is ' +
    "freed; retry after `Retry-After` seconds (not in the interface's table).",
  storage_unavailable:
    "The server's storage refused the read or write (a read-only or failing volume, a lock held too " +
    "long); nothing was changed, retry after `Retry-After` seconds (not in the interface's table).",
  rate_limit_exceeded:
    'Too many requests this UTC minute for the key or the organisation; retry after `Retry-After` seconds.',
  long_poll_limit_exceeded: 'Too many waiting requests at once for the key or the organisation.',
  internal_error:
    'An unexpected failure on our side; the request id finds it in the logs. On an operation whose ' +
    'statuses have no 503, a read-only or failing volume also answers this, with `Retry-After`: retry then.',
}
