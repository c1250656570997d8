/**
 * The closed set of error codes from the spec's Errors table. Domain code throws
 * DomainError with one of them and the neutral facts a caller needs to act on it; the
 * HTTP transport translates both in one place (src/http/errors.ts).
 * Inbound mail is refused with its own reasons (inbound/refusal.ts, src/smtp/replies.ts).
 */
export type ErrorCode =
  | 'invalid_api_key'
  | 'invalid_json'
  | 'unknown_property'
  | 'invalid_prefix'
  | 'invalid_idempotency_key'
  | 'idempotency_key_reused'
  | 'idempotency_in_progress'
  | 'idempotency_unavailable'
  | 'inbox_quota_exceeded'
  | 'address_unavailable'
  | 'address_generation_failed'
  | 'email_routing_unavailable'
  | 'inbox_not_found'
  | 'message_not_found'
  | 'attachment_not_found'
  | 'invalid_limit'
  | 'invalid_cursor'
  | 'invalid_include'
  | 'invalid_wait_seconds'
  | 'invalid_sender'
  | 'invalid_sender_domain'
  | 'invalid_received_after'
  | 'invalid_subject' // not a spec code: `subject` given more than once (the spec names none for it)
  | 'rate_limit_exceeded'
  | 'long_poll_limit_exceeded'
  | 'internal_error'
  | 'insufficient_storage' // not a spec code: the free-space guard is tripped (none of the spec's 503 codes fits)
  | 'storage_unavailable' // not a spec code: the storage refused a read or write (read-only or failing volume); retry
  | 'not_found' // unknown route; not a spec code, but every response keeps the envelope

export interface ErrorFacts {
  /** Seconds after which the same request can succeed. */
  retryAfterSeconds?: number
  /** For email_routing_unavailable: the provider answered with an error, or could not be reached. */
  routing?: 'rejected' | 'unavailable'
}

export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly facts: ErrorFacts = {},
  ) {
    super(message)
    this.name = 'DomainError'
  }
}
