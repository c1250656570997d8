/**
 * Stores one received message for each admitted inbox, with its raw source, attachments
 * and the usage counters, in one transaction of the storage port (SQLite: one job of the group
 * commit, src/storage/sqlite/group-commit.ts, which shares a transaction with the other jobs
 * of its batch and runs a job again alone if any of them fails), so either all of it is
 * visible or none. The promise settles after COMMIT; the SMTP 250 is sent only then, and
 * listeners are told then.
 */
import { isoTime } from '../../clock.ts'
import { newId } from '../../ids.ts'
import type { InboundDecider, InboundDelivery, InboundMessage, InboundPeriods } from '../../storage/port/inbound.ts'
import type { Services } from '../common/services.ts'
import { inboundPeriods, limitsFor, quotaRefusal } from './admission.ts'
import type { ParsedMail } from './parse.ts'
import { monotonicReceivedAt } from './received-at.ts'
import type { InboundRefusal } from './refusal.ts'
import type { Reservation } from './reservations.ts'
import { searchTextOf } from './search-text.ts'

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

/** A delivery with the reservation it turns into a stored count. */
interface Delivery extends InboundDelivery {
  reservation: Reservation
}

/** The message's rows as every copy stores them: core derives each field, storage writes them. */
function inboundMessage(raw: Buffer, mail: ParsedMail): InboundMessage {
  const senderAddress = mail.fromAddress.toLowerCase()
  return {
    fromName: mail.fromName,
    fromAddress: mail.fromAddress,
    subject: mail.subject,
    preview: mail.preview,
    sizeBytes: raw.byteLength,
    searchSubject: mail.subject.toLowerCase().slice(0, SEARCH_SUBJECT_CHARS),
    searchSender: senderAddress,
    searchSenderDomain: senderAddress.includes('@') ? senderAddress.slice(senderAddress.lastIndexOf('@') + 1) : '',
    internetMessageId: mail.internetMessageId,
    textBody: mail.text,
    htmlBody: mail.html,
    headersJson: JSON.stringify(mail.headers),
    searchText: searchTextOf(mail.subject.slice(0, SEARCH_SUBJECT_CHARS), mail.text, mail.html),
    raw,
    rawSha256: mail.rawSha256,
    attachments: mail.attachments.map((attachment) => ({
      filename: attachment.filename,
      contentType: attachment.contentType,
      sizeBytes: attachment.content.byteLength,
      disposition: attachment.disposition,
      contentId: attachment.contentId,
      content: attachment.content,
      sha256: attachment.sha256,
    })),
  }
}

/**
 * Returns what was stored; inboxes deleted since RCPT TO are skipped. A recipient admitted
 * in an earlier month or five-minute bucket is checked again against the current ones
 * (its reservation held room in the old period only); when no recipient can be stored
 * for that reason, the limit's refusal is thrown.
 */
export async function storeInboundMessage(
  s: Services,
  raw: Buffer,
  mail: ParsedMail,
  recipients: Reservation[],
  /** Told when the message's transaction has committed, before it is durable (StoreInboundInput). */
  committed?: () => void,
): Promise<StoredMessage[]> {
  const deliveries: Delivery[] = []
  for (const reservation of recipients) {
    // One copy per inbox, however often it was named.
    if (deliveries.some((d) => d.inboxId === reservation.inboxId)) continue
    deliveries.push({
      inboxId: reservation.inboxId,
      organizationId: reservation.organizationId,
      messageId: newId('msg'),
      attachmentIds: mail.attachments.map(() => newId('att')),
      reservation,
      ...(reservation.hold ? { hold: reservation.hold } : {}),
    })
  }

  // Each attempt of the transaction starts afresh (the group commit may run it twice).
  let now = 0
  let periods: InboundPeriods = { month: '', bucket: '' }
  let refusals: InboundRefusal[] = []
  const decide: InboundDecider<Delivery> = {
    begin() {
      // Timestamps are taken inside the transaction, so received_at follows commit order.
      // Quotas count by the clock's month and bucket; received_at is per inbox (times).
      now = s.clock.now()
      periods = inboundPeriods(now)
      refusals = []
      return periods
    },
    recheckNeeded: ({ reservation }) => reservation.month !== periods.month || reservation.bucket !== periods.bucket,
    recheck({ reservation }, facts) {
      // Its own unit is about to become a stored count or be refused: left in place, the
      // re-check would count it against itself (one unit left, RCPT at 10:04:59, DATA
      // ending at 10:05:00 gave a false "quota exceeded").
      s.reservations.release(reservation)
      const refusal = s.reservations.recheck(facts, periods, limitsFor(s, facts))
      if (refusal) refusals.push(refusal)
      return refusal === null
    },
    refused(_delivery, code, limit) {
      refusals.push(quotaRefusal(code, limit))
    },
    times(_delivery, newestInInbox) {
      // Never earlier than the inbox's newest message, even after a wall-clock step back.
      const at = monotonicReceivedAt(now, newestInInbox)
      return { receivedAt: isoTime(at), expiresAt: isoTime(at + s.config.limits.retentionDays * DAY) }
    },
    stored({ reservation, inboxId }) {
      // Its unit is a stored count now; in memory, releasing here keeps later jobs of this
      // same batch from counting it twice (once stored, once reserved).
      s.reservations.stored(reservation)
      s.notifier.bump(inboxId)
    },
  }
  const stored = await s.store.inbound.storeMessage({
    message: inboundMessage(raw, mail),
    deliveries,
    decide,
    ...(committed ? { committed } : {}),
  })
  for (const delivery of stored) s.reservations.committed(delivery.reservation)
  for (const message of stored) s.notifier.emit(message.inboxId, 'message_stored')
  if (stored.length === 0 && refusals[0]) throw refusals[0]
  return stored.map(({ messageId, inboxId }) => ({ messageId, inboxId }))
}
