/**
 * The rows of one stored copy, written with hand-written statements: the hot path of PostgreSQL
 * mode's ingest. Drizzle's builders cost more CPU per message than everything else the store
 * does (a profile of the bench's PostgreSQL phase: building statements was about a sixth of
 * the server's samples), so these are postgres.js tagged templates, each prepared once per
 * connection, as the SQLite adapter has its prepared statements (../../sqlite/store/inbound-statements.ts).
 * Column for column they write what ../schema.ts declares; the contract suite reads the rows
 * back through Drizzle on both backends (test/contract/inbound.contract.test.ts), and
 * postgres.schema-parity.test.ts keeps the schema itself in step with SQLite's.
 *
 * Every statement is sent at the call and not awaited here: postgres.js sends them in call
 * order on the transaction's connection and the server runs them in that order, so rows that
 * others reference (the message, an attachment) go before them.
 */
import type postgres from 'postgres'
import type { InboundDelivery, InboundMessage } from '../../port/inbound.ts'
import { encodeMailText as mail } from '../schema.ts'

const mailOrNull = (value: string | null) => (value === null ? null : mail(value))

/** Sends the message row, its attachments, contents, search text and source; answers the statements' promises. */
export function sendMessageRows(
  tx: postgres.TransactionSql,
  delivery: InboundDelivery,
  message: InboundMessage,
  row: { toAddress: string; receivedAt: string; expiresAt: string },
): Promise<unknown>[] {
  const { messageId, organizationId, inboxId } = delivery
  const sent: Promise<unknown>[] = [
    tx`insert into messages (id, inbox_id, organization_id, from_name, from_address, to_address, subject, preview, size_bytes, received_at, expires_at, search_subject, search_sender, search_sender_domain, internet_message_id)
      values (${messageId}, ${inboxId}, ${organizationId}, ${mail(message.fromName)}, ${mail(message.fromAddress)}, ${row.toAddress}, ${mail(message.subject)}, ${mail(message.preview)}, ${message.sizeBytes}, ${row.receivedAt}, ${row.expiresAt}, ${mail(message.searchSubject)}, ${mail(message.searchSender)}, ${mail(message.searchSenderDomain)}, ${mailOrNull(message.internetMessageId)})`.execute(),
  ]
  for (const [position, attachment] of message.attachments.entries())
    sent.push(
      tx`insert into attachments (id, message_id, organization_id, position, filename, content_type, size_bytes, disposition, content_id)
        values (${delivery.attachmentIds[position]!}, ${messageId}, ${organizationId}, ${position}, ${mail(attachment.filename)}, ${mail(attachment.contentType)}, ${attachment.sizeBytes}, ${attachment.disposition}, ${mailOrNull(attachment.contentId)})`.execute(),
    )
  sent.push(
    tx`insert into message_contents (message_id, text_body, html_body, headers_json) values (${messageId}, ${mailOrNull(message.textBody)}, ${mailOrNull(message.htmlBody)}, ${mail(message.headersJson)})`.execute(),
    tx`insert into message_search_texts (message_id, text) values (${messageId}, ${mail(message.searchText)})`.execute(),
    tx`insert into message_sources (message_id, raw, sha256) values (${messageId}, ${message.raw}, ${message.rawSha256})`.execute(),
  )
  for (const [position, attachment] of message.attachments.entries())
    sent.push(tx`insert into attachment_contents (attachment_id, content, sha256) values (${delivery.attachmentIds[position]!}, ${attachment.content}, ${attachment.sha256})`.execute())
  return sent
}
