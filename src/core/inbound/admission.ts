/**
 * RCPT TO checks: the address must name an active inbox on RECEIVING_DOMAIN, and the
 * monthly quota and both five-minute burst limits must have room, counting what is stored
 * plus what other transactions in flight have reserved. Passing reserves one unit.
 */
import { isoTime } from '../../clock.ts'
import type { AdmissionFacts, InboundPeriods } from '../../storage/port/inbound.ts'
import type { Services } from '../services.ts'
import { utcMonth } from '../usage.ts'
import { InboundRefusal } from './refusal.ts'
import type { Reservation } from './reservations.ts'

const FIVE_MINUTES = 5 * 60_000

export const burstBucket = (ms: number): string => isoTime(Math.floor(ms / FIVE_MINUTES) * FIVE_MINUTES)

/** The month and five-minute bucket the inbound counters use at `ms`. */
export const inboundPeriods = (ms: number): InboundPeriods => ({ month: utcMonth(ms).key, bucket: burstBucket(ms) })

/** Splits `local@domain`, lowercased; null when it is not an address on our domain. */
function localPartOf(address: string, receivingDomain: string): string | null {
  const at = address.lastIndexOf('@')
  if (at <= 0) return null
  if (address.slice(at + 1).toLowerCase() !== receivingDomain) return null
  return address.slice(0, at).toLowerCase()
}

/**
 * Why one more message for this inbox cannot be counted in `periods` now (the monthly quota,
 * then the inbox and organisation bursts), or null when it can. `facts` are the stored counts
 * in those periods and the organisation's overrides (null follows the environment's limit);
 * what live transactions have reserved in the same periods counts too.
 */
export function limitRefusal(s: Services, facts: AdmissionFacts, { month, bucket }: InboundPeriods): InboundRefusal | null {
  const org = facts.organizationId
  const inboxId = facts.inboxId
  const defaults = s.config.limits
  const monthlyEmails = facts.limits.monthlyEmails ?? defaults.monthlyEmails
  const inboxBurst = facts.limits.inboxBurst ?? defaults.inboxBurst
  const orgBurst = facts.limits.orgBurst ?? defaults.orgBurst
  const monthUsed = facts.counts.monthReceived + s.reservations.count((r) => r.organizationId === org && r.month === month)
  if (monthUsed >= monthlyEmails) return new InboundRefusal('monthly_quota_exceeded', `limit ${monthlyEmails} per UTC month`)
  const inboxUsed = facts.counts.inboxAccepted + s.reservations.count((r) => r.inboxId === inboxId && r.bucket === bucket)
  if (inboxUsed >= inboxBurst) return new InboundRefusal('inbox_burst_exceeded', `limit ${inboxBurst} per inbox per 5 minutes`)
  const orgUsed = facts.counts.orgAccepted + s.reservations.count((r) => r.organizationId === org && r.bucket === bucket)
  if (orgUsed >= orgBurst) return new InboundRefusal('organization_burst_exceeded', `limit ${orgBurst} per organization per 5 minutes`)
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
export async function admitRecipient(s: Services, { address, isLive, admitted = [] }: RecipientInput): Promise<Reservation> {
  const localPart = localPartOf(address, s.config.receivingDomain)
  const periods = inboundPeriods(s.clock.now())
  const facts = localPart ? await s.store.inbound.admissionFacts(localPart, periods) : null
  if (!facts) throw new InboundRefusal('unknown_recipient')
  if (!s.disk.hasRoom()) throw new InboundRefusal('insufficient_storage').forInbox(facts.inboxId)
  // The same inbox named twice in one transaction gets one copy and uses one unit.
  const again = admitted.find((r) => r.inboxId === facts.inboxId)
  if (again) return again

  // Counted against the reservations live now, after the read: nothing can slip in between,
  // because from here to `add` runs without an await.
  const refusal = limitRefusal(s, facts, periods)
  if (refusal) throw refusal.forInbox(facts.inboxId)

  const reservation: Reservation = { organizationId: facts.organizationId, inboxId: facts.inboxId, ...periods, isLive }
  s.reservations.add(reservation)
  return reservation
}
