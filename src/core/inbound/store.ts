/**
 * Stores one received message for each admitted inbox, with its raw source, attachments
 * and the usage counters, in ONE synchronous transaction: either all of it is visible or
 * none. The SMTP 250 is sent only after this returns; listeners are told after commit.
 */
import { and, eq, sql } from 'drizzle-orm'
import { isoTime } from '../../clock.ts'
import { newId } from '../../ids.ts'
import type { Tx } from '../../storage/database.ts'
import { attachmentContents, attachments, inboundBursts, inboxes, messageSources, messages, monthlyEmailUsage } from '../../storage/schema.ts'
import type { Services } from '../services.ts'
import { utcMonth } from '../usage.ts'
import { burstBucket } from './admission.ts'
import type { ParsedMail } from './parse.ts'
import type { Reservation } from './reservations.ts'

export interface StoredMessage {
  messageId: string
  inboxId: string
}

const DAY = 86_400_000

function bump(tx: Tx, subjectId: string, bucket: string): void {
  tx.insert(inboundBursts)
    .values({ subjectId, bucketStartsAt: bucket, accepted: 1 })
    .onConflictDoUpdate({ target: [inboundBursts.subjectId, inboundBursts.bucketStartsAt], set: { accepted: sql`${inboundBursts.accepted} + 1` } })
    .run()
}

/** Returns what was stored; inboxes deleted since RCPT TO are skipped. */
export function storeInboundMessage(s: Services, raw: Buffer, mail: ParsedMail, recipients: Reservation[]): StoredMessage[] {
  const now = s.clock.now()
  const receivedAt = isoTime(now)
  const expiresAt = isoTime(now + s.config.limits.retentionDays * DAY)
  const month = utcMonth(now).key
  const bucket = burstBucket(now)
  const senderAddress = mail.fromAddress.toLowerCase()
  const senderDomain = senderAddress.includes('@') ? senderAddress.slice(senderAddress.lastIndexOf('@') + 1) : ''
  const headersJson = JSON.stringify(mail.headers)

  const stored = s.storage.write((tx) => {
    const done: StoredMessage[] = []
    const seen = new Set<string>()
    for (const recipient of recipients) {
      if (seen.has(recipient.inboxId)) continue // one copy per inbox, however often it was named
      seen.add(recipient.inboxId)
      const inbox = tx.select({ address: inboxes.address }).from(inboxes).where(and(eq(inboxes.id, recipient.inboxId), eq(inboxes.state, 'active'))).get()
      if (!inbox) continue
      const messageId = newId('msg')
      tx.insert(messages)
        .values({
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
          searchSubject: mail.subject.toLowerCase(),
          searchSender: senderAddress,
          searchSenderDomain: senderDomain,
          internetMessageId: mail.internetMessageId,
          textBody: mail.text,
          htmlBody: mail.html,
          headersJson,
        })
        .run()
      tx.insert(messageSources).values({ messageId, raw }).run()
      mail.attachments.forEach((attachment, position) => {
        const attachmentId = newId('att')
        tx.insert(attachments)
          .values({
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
          .run()
        tx.insert(attachmentContents).values({ attachmentId, content: attachment.content }).run()
      })
      tx.insert(monthlyEmailUsage)
        .values({ organizationId: recipient.organizationId, month, received: 1 })
        .onConflictDoUpdate({ target: [monthlyEmailUsage.organizationId, monthlyEmailUsage.month], set: { received: sql`${monthlyEmailUsage.received} + 1` } })
        .run()
      bump(tx, recipient.inboxId, bucket)
      bump(tx, recipient.organizationId, bucket)
      done.push({ messageId, inboxId: recipient.inboxId })
    }
    return done
  })
  for (const message of stored) s.notifier.emit(message.inboxId, 'message_stored')
  return stored
}
