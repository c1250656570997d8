/**
 * Stores one received message for each admitted inbox, with its raw source, attachments
 * and the usage counters, as one job of the group commit (src/storage/sqlite/group-commit.ts): it
 * shares a transaction with the other jobs of its batch, and if any of them fails it runs
 * again in a transaction of its own, so either all of it is visible or none. The promise
 * settles after COMMIT; the SMTP 250 is sent only then, and listeners are told then.
 */
import { isoTime } from '../../clock.ts'
import { newId } from '../../ids.ts'
import type { Services } from '../services.ts'
import { transactionInGroup } from '../transaction.ts'
import { utcMonth } from '../usage.ts'
import { burstBucket, limitRefusal } from './admission.ts'
import type { ParsedMail } from './parse.ts'
import { monotonicReceivedAt } from './received-at.ts'
import type { InboundRefusal } from './refusal.ts'
import type { Reservation } from './reservations.ts'
import { searchTextOf } from './search-text.ts'
import { inboundStatements } from './statements.ts'

export interface StoredMessage {
  messageId: string
  inboxId: string
}

const DAY = 86_400_000

/**
 * The `subject` filter looks at this many characters of the subject. SQLite's instr() costs
 * the haystack's length times the needle's, so a huge subject searched with a long needle
 * held the event loop on every message (figure in bench/README.md). Real subjects are far
 * shorter.
 */
export const SEARCH_SUBJECT_CHARS = 1000

/**
 * Returns what was stored; inboxes deleted since RCPT TO are skipped. A recipient admitted
 * in an earlier month or five-minute bucket is checked again against the current ones
 * (its reservation held room in the old period only); when no recipient can be stored
 * for that reason, the limit's refusal is thrown.
 */
export async function storeInboundMessage(s: Services, raw: Buffer, mail: ParsedMail, recipients: Reservation[]): Promise<StoredMessage[]> {
  const senderAddress = mail.fromAddress.toLowerCase()
  const senderDomain = senderAddress.includes('@') ? senderAddress.slice(senderAddress.lastIndexOf('@') + 1) : ''
  const headersJson = JSON.stringify(mail.headers)
  const searchSubject = mail.subject.toLowerCase().slice(0, SEARCH_SUBJECT_CHARS)
  const searchText = searchTextOf(mail.subject.slice(0, SEARCH_SUBJECT_CHARS), mail.text, mail.html)

  // Prepared on the same (only) connection, so they run inside this write transaction.
  const statements = inboundStatements(s.storage.db)
  const stored = await transactionInGroup(
    s,
    () => {
      // Timestamps are taken inside the transaction, so received_at follows commit order.
      // Quotas count by the clock's month and bucket; received_at is per inbox (below).
      const now = s.clock.now()
      const month = utcMonth(now).key
      const bucket = burstBucket(now)
      const done: StoredMessage[] = []
      const refusals: InboundRefusal[] = []
      const seen = new Set<string>()
      for (const recipient of recipients) {
        if (seen.has(recipient.inboxId)) continue // one copy per inbox, however often it was named
        seen.add(recipient.inboxId)
        const inbox = statements.activeInboxAddress.get({ inboxId: recipient.inboxId })
        if (!inbox) continue
        if (recipient.month !== month || recipient.bucket !== bucket) {
          // Its own unit is about to become a stored count or be refused: left in place, the
          // re-check would count it against itself (one unit left, RCPT at 10:04:59, DATA
          // ending at 10:05:00 gave a false "quota exceeded").
          s.reservations.release(recipient)
          const refusal = limitRefusal(s, { id: recipient.inboxId, organizationId: recipient.organizationId }, month, bucket)
          if (refusal) {
            refusals.push(refusal)
            continue
          }
        }
        // Never earlier than the inbox's newest message, even after a wall-clock step back.
        const at = monotonicReceivedAt(now, statements.newestReceivedAt.get({ inboxId: recipient.inboxId })?.at)
        const receivedAt = isoTime(at)
        const expiresAt = isoTime(at + s.config.limits.retentionDays * DAY)
        const messageId = newId('msg')
        statements.insertMessage.run({
          id: messageId,
          inboxId: recipient.inboxId,
          organizationId: recipient.organizationId,
          fromName: mail.fromName,
          fromAddress: mail.fromAddress,
          toAddress: inbox.address,
          subject: mail.subject,
          preview: mail.preview,
          sizeBytes: raw.byteLength,
          receivedAt,
          expiresAt,
          searchSubject,
          searchSender: senderAddress,
          searchSenderDomain: senderDomain,
          internetMessageId: mail.internetMessageId,
        })
        statements.insertContent.run({ messageId, textBody: mail.text, htmlBody: mail.html, headersJson })
        statements.insertSearchText.run({ messageId, text: searchText })
        statements.insertSource.run({ messageId, raw, sha256: mail.rawSha256 })
        mail.attachments.forEach((attachment, position) => {
          const attachmentId = newId('att')
          statements.insertAttachment.run({
            id: attachmentId,
            messageId,
            organizationId: recipient.organizationId,
            position,
            filename: attachment.filename,
            contentType: attachment.contentType,
            sizeBytes: attachment.content.byteLength,
            disposition: attachment.disposition,
            contentId: attachment.contentId,
          })
          statements.insertAttachmentContent.run({ attachmentId, content: attachment.content, sha256: attachment.sha256 })
        })
        statements.countMonthlyEmail.run({ organizationId: recipient.organizationId, month })
        statements.bumpBurst.run({ subjectId: recipient.inboxId, bucket })
        statements.bumpBurst.run({ subjectId: recipient.organizationId, bucket })
        // Its unit is a stored count now; releasing here keeps later jobs of this same batch
        // from counting it twice (once stored, once reserved).
        s.reservations.release(recipient)
        s.notifier.bump(recipient.inboxId)
        done.push({ messageId, inboxId: recipient.inboxId })
      }
      return { done, refusals }
    },
    raw.byteLength + mail.attachments.reduce((sum, attachment) => sum + attachment.content.byteLength, 0),
  )
  for (const message of stored.done) s.notifier.emit(message.inboxId, 'message_stored')
  if (stored.done.length === 0 && stored.refusals[0]) throw stored.refusals[0]
  return stored.done
}
