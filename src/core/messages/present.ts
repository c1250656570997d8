import { asc, inArray } from 'drizzle-orm'
import type { DbOrTx } from '../../storage/database.ts'
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

/** Full messages (content fields included) for the given rows, attachments in received order. */
export function presentFull(db: DbOrTx, rows: Array<typeof messages.$inferSelect>, filesUrl: string): Message[] {
  if (rows.length === 0) return []
  const ids = rows.map((row) => row.id)
  const contents = new Map(
    db
      .select()
      .from(messageContents)
      .where(inArray(messageContents.messageId, ids))
      .all()
      .map((content) => [content.messageId, content]),
  )
  const attachmentRows = db.select().from(attachments).where(inArray(attachments.messageId, ids)).orderBy(asc(attachments.messageId), asc(attachments.position)).all()
  return rows.map((row) => {
    // Written in the same transaction as the message, so it is always there.
    const content = contents.get(row.id)!
    return {
      ...presentSummary(row),
      internet_message_id: row.internetMessageId,
      text: content.textBody,
      html: content.htmlBody,
      headers: JSON.parse(content.headersJson) as Array<[string, string]>,
      attachments: attachmentRows.filter((a) => a.messageId === row.id).map((a) => presentAttachment(a, filesUrl)),
    }
  })
}
