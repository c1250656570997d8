/**
 * RCPT TO checks: the address must name an active inbox on RECEIVING_DOMAIN, and the
 * monthly quota and both five-minute burst limits must have room, counting what is stored
 * plus what other transactions in flight have reserved. Passing reserves one unit.
 */
import { and, eq } from 'drizzle-orm'
import { isoTime } from '../../clock.ts'
import type { Db } from '../../storage/database.ts'
import { inboundBursts, inboxes } from '../../storage/schema.ts'
import type { Services } from '../services.ts'
import { emailsReceived, utcMonth } from '../usage.ts'
import { InboundRefusal } from './refusal.ts'
import type { Reservation } from './reservations.ts'

const FIVE_MINUTES = 5 * 60_000

export const burstBucket = (ms: number): string => isoTime(Math.floor(ms / FIVE_MINUTES) * FIVE_MINUTES)

export function acceptedInBucket(db: Db, subjectId: string, bucket: string): number {
  return db.select({ accepted: inboundBursts.accepted }).from(inboundBursts).where(and(eq(inboundBursts.subjectId, subjectId), eq(inboundBursts.bucketStartsAt, bucket))).get()?.accepted ?? 0
}

/** Splits `local@domain`, lowercased; null when it is not an address on our domain. */
export function localPartOf(address: string, receivingDomain: string): string | null {
  const at = address.lastIndexOf('@')
  if (at <= 0) return null
  if (address.slice(at + 1).toLowerCase() !== receivingDomain) return null
  return address.slice(0, at).toLowerCase()
}

/**
 * Admits one recipient for a transaction, returning its reservation. `isLive` tells
 * whether that transaction is still open (so RSET and disconnects release implicitly).
 */
export function admitRecipient(s: Services, address: string, isLive: () => boolean, admitted: readonly Reservation[] = []): Reservation {
  const { db } = s.storage
  const { limits } = s.config
  const localPart = localPartOf(address, s.config.receivingDomain)
  const inbox = localPart
    ? db.select({ id: inboxes.id, organizationId: inboxes.organizationId }).from(inboxes).where(and(eq(inboxes.localPart, localPart), eq(inboxes.state, 'active'))).get()
    : undefined
  if (!inbox) throw new InboundRefusal('unknown_recipient')
  // The same inbox named twice in one transaction gets one copy and uses one unit.
  const again = admitted.find((r) => r.inboxId === inbox.id)
  if (again) return again

  const now = s.clock.now()
  const month = utcMonth(now).key
  const bucket = burstBucket(now)
  const org = inbox.organizationId
  const monthUsed = emailsReceived(db, org, month) + s.reservations.count((r) => r.organizationId === org && r.month === month)
  if (monthUsed >= limits.monthlyEmails) throw new InboundRefusal('monthly_quota_exceeded', `limit ${limits.monthlyEmails} per UTC month`)
  const inboxUsed = acceptedInBucket(db, inbox.id, bucket) + s.reservations.count((r) => r.inboxId === inbox.id && r.bucket === bucket)
  if (inboxUsed >= limits.inboxBurst) throw new InboundRefusal('inbox_burst_exceeded', `limit ${limits.inboxBurst} per inbox per 5 minutes`)
  const orgUsed = acceptedInBucket(db, org, bucket) + s.reservations.count((r) => r.organizationId === org && r.bucket === bucket)
  if (orgUsed >= limits.orgBurst) throw new InboundRefusal('organization_burst_exceeded', `limit ${limits.orgBurst} per organization per 5 minutes`)

  const reservation: Reservation = { organizationId: org, inboxId: inbox.id, month, bucket, isLive }
  s.reservations.add(reservation)
  return reservation
}
