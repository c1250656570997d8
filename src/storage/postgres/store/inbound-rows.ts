/**
 * The rows of a batch's stored copies, written with hand-written statements: the hot path of
 * PostgreSQL mode's ingest. One statement per table for the whole batch, its rows passed as one
 * array per column and read back with `unnest` (its text fixed whatever the batch's size, so
 * each is prepared once per connection): a statement costs the server a parse-free bind and
 * execute and the machine an encoding and a socket write, so per batch rather than per message
 * they cost a fraction (bench/README.md, "CPU per message"). Column for column they write what
 * ../schema.ts declares; the contract suite reads the rows back through Drizzle on both
 * backends (test/contract/inbound.contract.test.ts), and postgres.schema-parity.test.ts keeps
 * the schema itself in step with SQLite's. The arrays are literals (../array-literal.ts).
 *
 * Statements are sent at the call and not awaited here: postgres.js sends them in call order on
 * the transaction's connection and the server runs them in that order, so rows that others
 * reference (the messages, the attachments) go before them.
 */
import type postgres from 'postgres'
import type { InboundDelivery, InboundMessage } from '../../port/inbound.ts'
import { byteaArray, textArray } from '../array-literal.ts'
import { encodeMailText as mail } from '../schema.ts'

const mailOrNull = (value: string | null) => (value === null ? null : mail(value))

/**
 * Past this many bytes of raw message, a batch's rows go out in more than one group of
 * statements: a batch of 2 KB mail is one group, large messages one a group each (as each
 * message's statements were), so no array literal holds many large bodies at once.
 */
const GROUP_BYTES = 1024 * 1024

interface Copy {
  delivery: InboundDelivery
  message: InboundMessage
  row: { toAddress: string; receivedAt: string; expiresAt: string }
}

/** The rows of the copies a batch stores, collected in the batch's order and sent together. */
export class MessageRows {
  private copies: Copy[] = []

  get size(): number {
    return this.copies.length
  }

  add(delivery: InboundDelivery, message: InboundMessage, row: Copy['row']): void {
    this.copies.push({ delivery, message, row })
  }

  /** Sends every row collected (nothing when none was) and forgets them; answers the statements' promises. */
  send(tx: postgres.Sql | postgres.TransactionSql): Promise<unknown>[] {
    const sent: Promise<unknown>[] = []
    let group: Copy[] = []
    let bytes = 0
    for (const copy of this.copies) {
      if (group.length > 0 && bytes + copy.message.sizeBytes > GROUP_BYTES) {
        sent.push(...sendGroup(tx, group))
        group = []
        bytes = 0
      }
      group.push(copy)
      bytes += copy.message.sizeBytes
    }
    if (group.length > 0) sent.push(...sendGroup(tx, group))
    this.copies = []
    return sent
  }
}

/** A group's rows: one statement per table, the referenced tables first. */
function sendGroup(tx: postgres.Sql | postgres.TransactionSql, copies: Copy[]): Promise<unknown>[] {
  const of = <T>(pick: (copy: Copy) => T): T[] => copies.map(pick)
  const ids = of((c) => c.delivery.messageId)
  const messages = of((c) => c.message)
  const sent: Promise<unknown>[] = [
    tx`insert into messages (id, inbox_id, organization_id, from_name, from_address, to_address, subject, preview,
        size_bytes, received_at, expires_at, search_subject, search_sender, search_sender_domain, internet_message_id)
      select * from unnest(
        ${textArray(ids)}::text[],
        ${textArray(of((c) => c.delivery.inboxId))}::text[],
        ${textArray(of((c) => c.delivery.organizationId))}::text[],
        ${textArray(messages.map((m) => mail(m.fromName)))}::text[],
        ${textArray(messages.map((m) => mail(m.fromAddress)))}::text[],
        ${textArray(of((c) => c.row.toAddress))}::text[],
        ${textArray(messages.map((m) => mail(m.subject)))}::text[],
        ${textArray(messages.map((m) => mail(m.preview)))}::text[],
        ${textArray(messages.map((m) => m.sizeBytes))}::bigint[],
        ${textArray(of((c) => c.row.receivedAt))}::timestamptz[],
        ${textArray(of((c) => c.row.expiresAt))}::timestamptz[],
        ${textArray(messages.map((m) => mail(m.searchSubject)))}::text[],
        ${textArray(messages.map((m) => mail(m.searchSender)))}::text[],
        ${textArray(messages.map((m) => mail(m.searchSenderDomain)))}::text[],
        ${textArray(messages.map((m) => mailOrNull(m.internetMessageId)))}::text[])`.execute(),
  ]
  const attached = copies.flatMap(({ delivery, message }) =>
    message.attachments.map((attachment, position) => ({
      id: delivery.attachmentIds[position]!,
      delivery,
      attachment,
      position,
    })),
  )
  if (attached.length > 0)
    sent.push(
      tx`insert into attachments (id, message_id, organization_id, position, filename, content_type, size_bytes,
          disposition, content_id)
        select * from unnest(
          ${textArray(attached.map((a) => a.id))}::text[],
          ${textArray(attached.map((a) => a.delivery.messageId))}::text[],
          ${textArray(attached.map((a) => a.delivery.organizationId))}::text[],
          ${textArray(attached.map((a) => a.position))}::int[],
          ${textArray(attached.map((a) => mail(a.attachment.filename)))}::text[],
          ${textArray(attached.map((a) => mail(a.attachment.contentType)))}::text[],
          ${textArray(attached.map((a) => a.attachment.sizeBytes))}::bigint[],
          ${textArray(attached.map((a) => a.attachment.disposition))}::text[],
          ${textArray(attached.map((a) => mailOrNull(a.attachment.contentId)))}::text[])`.execute(),
    )
  sent.push(
    tx`insert into message_contents (message_id, text_body, html_body, headers_json)
      select * from unnest(
        ${textArray(ids)}::text[],
        ${textArray(messages.map((m) => mailOrNull(m.textBody)))}::text[],
        ${textArray(messages.map((m) => mailOrNull(m.htmlBody)))}::text[],
        ${textArray(messages.map((m) => mail(m.headersJson)))}::text[])`.execute(),
    tx`insert into message_search_texts (message_id, text)
      select * from unnest(
        ${textArray(ids)}::text[],
        ${textArray(messages.map((m) => mail(m.searchText)))}::text[])`.execute(),
    tx`insert into message_sources (message_id, raw, sha256)
      select * from unnest(
        ${textArray(ids)}::text[],
        ${byteaArray(messages.map((m) => m.raw))}::bytea[],
        ${textArray(messages.map((m) => m.rawSha256))}::text[])`.execute(),
  )
  if (attached.length > 0)
    sent.push(
      tx`insert into attachment_contents (attachment_id, content, sha256)
        select * from unnest(
          ${textArray(attached.map((a) => a.id))}::text[],
          ${byteaArray(attached.map((a) => a.attachment.content))}::bytea[],
          ${textArray(attached.map((a) => a.attachment.sha256))}::text[])`.execute(),
    )
  return sent
}
