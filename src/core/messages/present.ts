/** Rows of the message store (src/storage/port/messages.ts) as the API's objects. */
import type { FullMessageRows, MessageSummaryRow } from '../../storage/port/messages.ts'
import type { AttachmentRow } from '../../storage/rows.ts'
import type { Attachment, Message, MessageSummary } from '../common/models.ts'

export const presentSummary = (row: MessageSummaryRow): MessageSummary => ({
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

const presentAttachment = (row: AttachmentRow, filesUrl: string): Attachment => ({
  id: row.id,
  filename: row.filename,
  content_type: row.contentType,
  size_bytes: row.sizeBytes,
  disposition: row.disposition,
  content_id: row.contentId,
  download_url: `${filesUrl}/v1/attachments/${row.id}`,
})

/** A full message (content fields included), attachments in received order. */
export const presentFull = ({ message, content, attachments }: FullMessageRows, filesUrl: string): Message => ({
  ...presentSummary(message),
  internet_message_id: message.internetMessageId,
  text: content.textBody,
  html: content.htmlBody,
  headers: JSON.parse(content.headersJson) as Array<[string, string]>,
  attachments: attachments.map((a) => presentAttachment(a, filesUrl)),
})
