/**
 * RCPT TO checks: the address must name an active inbox on RECEIVING_DOMAIN, and the
 * monthly quota and both five-minute burst limits must have room, counting what is stored
 * plus what other transactions in flight have reserved. Passing reserves one unit.
 */
import { isoTime } from '../../clock.ts'
import type { Db } from '../../storage/database.ts'
import { orgLimits } from '../limits.ts'
import type { Services } from '../services.ts'
import { emailsReceived, utcMonth } from '../usage.ts'
import { InboundRefusal } from './refusal.ts'
import type { Reservation } from './reservations.ts'
import { inboundStatements } from './statements.ts'

const FIVE_MINUTES = 5 * 60_000

export const burstBucket = (ms: number): string => isoTime(Math.floor(ms / FIVE_MINUTES) * FIVE_MINUTES)

export function acceptedInBucket(db: Db, subjectId: string, bucket: string): number {
  return inboundStatements(db).acceptedInBucket.get({ subjectId, bucket })?.accepted ?? 0
}

/** Splits `local@domain`, lowercased; null when it is not an address on our domain. */
function localPartOf(address: string, receivingDomain: string): string | null {
  const at = address.lastIndexOf('@')
  if (at <= 0) return null
  if (address.slice(at + 1).toLowerCase() !== receivingDomain) return null
  return address.slice(0, at).toLowerCase()
}

/**
 * Why one more message for this inbox cannot be counted in `month` and `bucket` now (the
 * monthly quota, then the inbox and organisation bursts), or null when it can. Counts
 * what is stored plus what live transactions have reserved in those same periods.
 */
export function limitRefusal(s: Services, inbox: { id: string; organizationId: string }, month: string, bucket: string): InboundRefusal | null {
  const { db } = s.storage
  const org = inbox.organizationId
  const limits = orgLimits(db, s.config.limits, org)
  const monthUsed = emailsReceived(db, org, month) + s.reservations.count((r) => r.organizationId === org && r.month === month)
  if (monthUsed >= limits.monthlyEmails) return new InboundRefusal('monthly_quota_exceeded', `limit ${limits.monthlyEmails} per UTC month`)
  const inboxUsed = acceptedInBucket(db, inbox.id, bucket) + s.reservations.count((r) => r.inboxId === inbox.id && r.bucket === bucket)
  if (inboxUsed >= limits.inboxBurst) return new InboundRefusal('inbox_burst_exceeded', `limit ${limits.inboxBurst} per inbox per 5 minutes`)
  const orgUsed = acceptedInBucket(db, org, bucket) + s.reservations.count((r) => r.organizationId === org && r.bucket === bucket)
  if (orgUsed >= limits.orgBurst) return new InboundRefusal('organization_burst_exceeded', `limit ${limits.orgBurst} per organization per 5 minutes`)
  return null
}

interface RecipientInput {
  /** The RCPT TO address as given. */
  address: string
  /** Whether the SMTP transaction is still open (so RSET and disconnects release implicitly). */
  isLive: () => boolean
  /** The transaction's reservations so far: the same inbox named twice uses one unit. */
  admitted?: readonly Reservation[]
}

/** Admits one recipient for a transaction, returning its reservation. */
export function admitRecipient(s: Services, { address, isLive, admitted = [] }: RecipientInput): Reservation {
  const { db } = s.storage
  const localPart = localPartOf(address, s.config.receivingDomain)
  const inbox = localPart ? inboundStatements(db).activeInboxByLocalPart.get({ localPart }) : undefined
  if (!inbox) throw new InboundRefusal('unknown_recipient')
  if (!s.disk.hasRoom()) throw new InboundRefusal('insufficient_storage').forInbox(inbox.id)
  // The same inbox named twice in one transaction gets one copy and uses one unit.
  const again = admitted.find((r) => r.inboxId === inbox.id)
  if (again) return again

  const now = s.clock.now()
  const month = utcMonth(now).key
  const bucket = burstBucket(now)
  const refusal = limitRefusal(s, inbox, month, bucket)
  if (refusal) throw refusal.forInbox(inbox.id)
  const org = inbox.organizationId

  const reservation: Reservation = { organizationId: org, inboxId: inbox.id, month, bucket, isLive }
  s.reservations.add(reservation)
  return reservation
}
