/**
 * The console's error tables, exhaustive like src/http/errors.ts: a new Refusal kind or
 * DomainError code does not compile until it has a row here.
 *
 * The viewer calls the same domain verbs as /v1, which refuse with DomainError codes; the
 * console shows each as one of its own kinds. Every not-found is the same 404 as another
 * organisation's id, a bad value is 400, and every other refusal (quota, address taken,
 * provider down, disk full) is 409 with the verb's own message, except `rate_limit_exceeded`
 * (the downloads' per-organisation slots, shared with /v1): 429 with its `Retry-After`, as
 * the API answers. `internal_error` stays a 500: the verb has logged why (stored bytes that
 * fail their check).
 */
import { Refusal, type RefusalKind } from '../core/common/refusals.ts'
import { DomainError, type ErrorCode } from '../core/common/errors.ts'

/** The page status of each console refusal. */
export const STATUS: Record<RefusalKind, number> = {
  not_found: 404,
  forbidden: 403,
  invalid: 400,
  conflict: 409,
  throttled: 429,
  unauthenticated: 401,
}

/** How the console shows each DomainError code. */
export const DOMAIN_KIND: Record<ErrorCode, RefusalKind | 'internal'> = {
  invalid_api_key: 'invalid',
  invalid_json: 'invalid',
  unknown_property: 'conflict',
  invalid_prefix: 'invalid',
  invalid_idempotency_key: 'invalid',
  idempotency_key_reused: 'conflict',
  idempotency_in_progress: 'conflict',
  idempotency_unavailable: 'conflict',
  inbox_quota_exceeded: 'conflict',
  address_unavailable: 'conflict',
  address_generation_failed: 'conflict',
  email_routing_unavailable: 'conflict',
  inbox_not_found: 'not_found',
  message_not_found: 'not_found',
  attachment_not_found: 'not_found',
  invalid_limit: 'invalid',
  invalid_cursor: 'invalid',
  invalid_include: 'invalid',
  invalid_wait_seconds: 'invalid',
  invalid_sender: 'invalid',
  invalid_sender_domain: 'invalid',
  invalid_received_after: 'invalid',
  invalid_subject: 'invalid',
  rate_limit_exceeded: 'throttled',
  long_poll_limit_exceeded: 'conflict',
  internal_error: 'internal',
  insufficient_storage: 'conflict',
  storage_unavailable: 'conflict',
  not_found: 'not_found',
}

/** A DomainError as the Refusal the console shows; anything else (internal_error included) as it was. */
export function asConsoleError(error: unknown): unknown {
  if (!(error instanceof DomainError)) return error
  const kind = DOMAIN_KIND[error.code]
  if (kind === 'internal') return error
  // Not-found says nothing more, so an id of another organisation reads like a made-up one.
  if (kind === 'not_found') return new Refusal('not_found', 'Not found.')
  return new Refusal(
    kind,
    error.message,
    kind === 'conflict' || kind === 'throttled' ? error.facts.retryAfterSeconds : undefined,
  )
}
