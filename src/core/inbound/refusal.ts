/**
 * Why inbound mail was refused. The domain names the reason; src/smtp/replies.ts turns it
 * into an SMTP reply code and text.
 */
export type RefusalReason =
  | 'unknown_recipient'
  | 'monthly_quota_exceeded'
  | 'inbox_burst_exceeded'
  | 'organization_burst_exceeded'
  | 'message_too_large'
  | 'too_many_lines'
  | 'too_many_parts'
  | 'too_many_attachments'
  | 'attachment_too_large'
  | 'attachments_too_large'
  | 'body_too_large'
  | 'unparseable'
  | 'parse_timeout'
  | 'storage_failed'
  /** SMTP_REQUIRE_TLS is on and the sender did not STARTTLS first. */
  | 'tls_required'
  /** The free-space guard is tripped (DISK_MIN_FREE); the sender retries later. */
  | 'insufficient_storage'

export class InboundRefusal extends Error {
  constructor(
    readonly reason: RefusalReason,
    /** Detail appended to the reply text (limits, which part); never message content. */
    readonly detail: string = '',
  ) {
    super(`${reason}${detail ? `: ${detail}` : ''}`)
    this.name = 'InboundRefusal'
  }

  /** At RCPT: the inbox the refused address named, null when none (the console lists an inbox's refusals). */
  inboxId: string | null = null

  /** This refusal, marked as one for the inbox `inboxId`. */
  forInbox(inboxId: string): this {
    this.inboxId = inboxId
    return this
  }
}
