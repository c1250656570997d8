import { asc, eq, sql } from 'drizzle-orm'
import type { Db } from '../../storage/database.ts'
import { preparedPerDatabase } from '../../storage/prepared.ts'
import { attachments, messageContents, messages } from '../../storage/schema.ts'
import type { Attachment, Message, MessageSummary } from '../models.ts'

/** The columns a list summary needs; content columns stay on disk unless asked for. */
export const summaryColumns = {
  id: messages.id,
  inboxId: messages.inboxId,
  fromName: messages.fromName,
  fromAddress: messages.fromAddress,
  toAddress: messages.toAddress,
  subject: messages.subject,
  preview: messages.preview,
  sizeBytes: messages.sizeBytes,
  receivedAt: messages.receivedAt,
  expiresAt: messages.expiresAt,
}

type SummaryRow = { [K in keyof typeof summaryColumns]: (typeof messages.$inferSelect)[K] }

export const presentSummary = (row: SummaryRow): MessageSummary => ({
  id: row.id,
  inbox_id: row.inboxId,
  from: { name: row.fromName, address: row.fromAddress },
  to: row.toAddress,
  subject: row.subject,
  preview: row.preview,
  size_bytes: row.sizeBytes,
  received_at: row.receivedAt,
  expires_at: row.expiresAt,
})

const presentAttachment = (row: typeof attachments.$inferSelect, filesUrl: string): Attachment => ({
  id: row.id,
  filename: row.filename,
  content_type: row.contentType,
  size_bytes: row.sizeBytes,
  disposition: row.disposition,
  content_id: row.contentId,
  download_url: `${filesUrl}/v1/attachments/${row.id}`,
})

// Full messages are read one at a time (getMessage, or a listing with include=content and
// limit=1), on the path from commit to a woken long poll's answer: prepared once, these
// skip Drizzle's SQL building, about half of the read's time (bench/README.md).
const contentQueries = preparedPerDatabase((db) => {
  const messageId = sql.placeholder('messageId')
  return {
    content: db.select().from(messageContents).where(eq(messageContents.messageId, messageId)).prepare(),
    attachments: db.select().from(attachments).where(eq(attachments.messageId, messageId)).orderBy(asc(attachments.position)).prepare(),
  }
})

/** Full messages (content fields included) for the given rows, attachments in received order. */
export function presentFull(db: Db, rows: Array<typeof messages.$inferSelect>, filesUrl: string): Message[] {
  const queries = contentQueries(db)
  return rows.map((row) => {
    // Written in the same transaction as the message, so it is always there.
    const content = queries.content.get({ messageId: row.id })!
    return {
      ...presentSummary(row),
      internet_message_id: row.internetMessageId,
      text: content.textBody,
      html: content.htmlBody,
      headers: JSON.parse(content.headersJson) as Array<[string, string]>,
      attachments: queries.attachments.all({ messageId: row.id }).map((a) => presentAttachment(a, filesUrl)),
    }
  })
}
