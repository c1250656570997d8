/**
 * The one place that maps inbound refusals to SMTP replies. Burst limits answer 4xx so a
 * sender retries later; size, content and quota limits answer 5xx (retrying cannot help
 * before the month or the message changes). Texts carry the spec's wording where it has one.
 */
import { InboundRefusal, type RefusalReason } from '../core/inbound/refusal.ts'

const REPLIES: Record<RefusalReason, { code: number; text: string }> = {
  unknown_recipient: { code: 550, text: 'Recipient address rejected' },
  monthly_quota_exceeded: { code: 550, text: 'Monthly recipient quota exceeded' },
  inbox_burst_exceeded: { code: 450, text: 'Inbox receive rate exceeded, try again later' },
  organization_burst_exceeded: { code: 450, text: 'Organization receive rate exceeded, try again later' },
  message_too_large: { code: 552, text: 'Message size exceeds fixed maximum message size' },
  too_many_lines: { code: 552, text: 'Message has too many lines' },
  too_many_parts: { code: 552, text: 'Message has too many MIME parts' },
  too_many_attachments: { code: 552, text: 'Too many attachments' },
  attachment_too_large: { code: 552, text: 'Attachment too large' },
  attachments_too_large: { code: 552, text: 'Attachments too large in total' },
  body_too_large: { code: 552, text: 'Message body too large' },
  unparseable: { code: 554, text: 'Message could not be parsed' },
  parse_timeout: { code: 554, text: 'Message could not be parsed in time' },
  storage_failed: { code: 451, text: 'Temporary failure storing the message, try again later' },
  // RFC 3463's code, as Postfix words it
  insufficient_storage: { code: 452, text: '4.3.1 Insufficient system storage' },
  tls_required: { code: 530, text: 'Must issue a STARTTLS command first' }, // RFC 3207
}

export type SmtpReplyError = Error & { responseCode: number }

export function smtpReply(error: unknown): SmtpReplyError {
  const reply =
    error instanceof InboundRefusal
      ? REPLIES[error.reason]
      : { code: 451, text: 'Temporary local error, try again later' }
  const detail =
    error instanceof InboundRefusal && error.detail && error.reason !== 'unparseable' ? ` (${error.detail})` : ''
  const reject = new Error(`${reply.text}${detail}`) as SmtpReplyError
  reject.responseCode = reply.code
  return reject
}

/** Replies of the transport's own guards (admission, timing, protocol), not of the domain. */
export const GUARD_REPLIES = {
  too_many_connections: { code: 421, text: 'Too many connections from your address, try again later' },
  greeting_timeout: { code: 421, text: 'Timeout waiting for EHLO/HELO, closing connection' },
  command_timeout: { code: 421, text: 'Timeout waiting for the next command, closing connection' },
  data_timeout: { code: 421, text: 'Message data took too long, closing connection' },
  session_timeout: { code: 421, text: 'Session time limit reached, closing connection' },
  unknown_parameter: { code: 555, text: 'MAIL FROM/RCPT TO parameter not recognized' },
  proxy_header_refused: { code: 421, text: 'PROXY header not accepted from your address, closing connection' },
} as const

export function guardReply(reason: keyof typeof GUARD_REPLIES): SmtpReplyError {
  const reply = GUARD_REPLIES[reason]
  const reject = new Error(reply.text) as SmtpReplyError
  reject.responseCode = reply.code
  return reject
}
