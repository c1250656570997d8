/**
 * The closed set of error codes from the spec's Errors table. Domain code throws
 * DomainError with one of them; each transport maps it once (http/errors.ts, smtp/).
 */
export const ERROR_STATUS = {
  invalid_api_key: 401,
  invalid_json: 422,
  unknown_property: 422,
  invalid_prefix: 422,
  invalid_idempotency_key: 422,
  idempotency_key_reused: 409,
  idempotency_in_progress: 409,
  idempotency_unavailable: 503,
  inbox_quota_exceeded: 409,
  address_unavailable: 409,
  address_generation_failed: 503,
  email_routing_unavailable: 503, // 502 when the provider answered with an error; see status override
  inbox_not_found: 404,
  message_not_found: 404,
  attachment_not_found: 404,
  invalid_limit: 422,
  invalid_cursor: 422,
  invalid_include: 422,
  invalid_wait_seconds: 422,
  invalid_sender: 422,
  invalid_sender_domain: 422,
  invalid_received_after: 422,
  invalid_subject: 422, // not a spec code: `subject` given more than once (the spec names none for it)
  rate_limit_exceeded: 429,
  long_poll_limit_exceeded: 429,
  internal_error: 500,
  not_found: 404, // unknown route; not a spec code, but every response keeps the envelope
} as const

export type ErrorCode = keyof typeof ERROR_STATUS

export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly options: { status?: number; headers?: Record<string, string> } = {},
  ) {
    super(message)
    this.name = 'DomainError'
  }

  get status(): number {
    return this.options.status ?? ERROR_STATUS[this.code]
  }
}
