/**
 * RCPT TO checks: the address must name an active inbox on RECEIVING_DOMAIN, and the
 * monthly quota and both five-minute burst limits must have room, counting what is stored
 * plus what other transactions in flight have reserved (Services.reservations: in memory in
 * SQLite mode, in the database across machines in PostgreSQL mode). Passing reserves one unit.
 */
import { isoTime } from '../../clock.ts'
import type { AdmissionFacts, InboundLimitCode, InboundLimits, InboundPeriods } from '../../storage/port/inbound.ts'
import type { Services } from '../common/services.ts'
import { utcMonth } from '../limits/usage.ts'
import { InboundRefusal } from './refusal.ts'
import type { Reservation } from './reservations.ts'

const FIVE_MINUTES = 5 * 60_000

/**
 * How long past the statement timeout (DATABASE_STATEMENT_TIMEOUT_MS) a recipient's admission
 * may take before RCPT TO answers 451 without it: the margin of the PostgreSQL client's own
 * silence deadline (storage/postgres/client.ts), so the documented bound (statement timeout
 * plus 2 s, 12 s by default) holds for the whole admission, not for each of its statements.
 */
export const ADMISSION_MARGIN_MS = 2_000

/** An admission still unanswered at its bound: storage that cannot answer now (SMTP 451). */
class AdmissionPastDeadline extends Error {
  // storage-health.ts counts this code as a failure to reach the database (or, in SQLite mode, a busy one).
  readonly code = 'QUERY_PAST_DEADLINE'
  constructor(boundMs: number) {
    super(`the database did not answer the recipient's admission within ${boundMs} ms`)
    this.name = 'AdmissionPastDeadline'
  }
}

const burstBucket = (ms: number): string => isoTime(Math.floor(ms / FIVE_MINUTES) * FIVE_MINUTES)

/** The month and five-minute bucket the inbound counters use at `ms`. */
export const inboundPeriods = (ms: number): InboundPeriods => ({ month: utcMonth(ms).key, bucket: burstBucket(ms) })

/** Splits `local@domain`, lowercased; null when it is not an address on our domain. */
function localPartOf(address: string, receivingDomain: string): string | null {
  const at = address.lastIndexOf('@')
  if (at <= 0) return null
  if (address.slice(at + 1).toLowerCase() !== receivingDomain) return null
  return address.slice(0, at).toLowerCase()
}

/** The limits in force for the inbox of `facts`: the organisation's overrides, else the environment's. */
export function limitsFor(s: Services, facts: AdmissionFacts): InboundLimits {
  const defaults = s.config.limits
  return {
    monthlyEmails: facts.limits.monthlyEmails ?? defaults.monthlyEmails,
    inboxBurst: facts.limits.inboxBurst ?? defaults.inboxBurst,
    orgBurst: facts.limits.orgBurst ?? defaults.orgBurst,
  }
}

/** The spec's refusal for a full limit, with its detail text. */
export function quotaRefusal(code: InboundLimitCode, limit: number): InboundRefusal {
  if (code === 'monthly_quota_exceeded') return new InboundRefusal(code, `limit ${limit} per UTC month`)
  if (code === 'inbox_burst_exceeded') return new InboundRefusal(code, `limit ${limit} per inbox per 5 minutes`)
  return new InboundRefusal(code, `limit ${limit} per organization per 5 minutes`)
}

/** Units used in one month and bucket: stored counts plus whatever is held for transactions in flight. */
export interface UnitsUsed {
  month: number
  inbox: number
  org: number
}

/**
 * Why one more message cannot be counted (the monthly quota, then the inbox and organisation
 * bursts, in the spec's order), or null when every limit has room.
 */
export function limitRefusal(limits: InboundLimits, used: UnitsUsed): InboundRefusal | null {
  if (used.month >= limits.monthlyEmails) return quotaRefusal('monthly_quota_exceeded', limits.monthlyEmails)
  if (used.inbox >= limits.inboxBurst) return quotaRefusal('inbox_burst_exceeded', limits.inboxBurst)
  if (used.org >= limits.orgBurst) return quotaRefusal('organization_burst_exceeded', limits.orgBurst)
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
export async function admitRecipient(
  s: Services,
  { address, isLive, admitted = [] }: RecipientInput,
): Promise<Reservation> {
  const localPart = localPartOf(address, s.config.receivingDomain)
  const periods = inboundPeriods(s.clock.now())
  const facts = localPart ? await s.store.inbound.admissionFacts(localPart, periods) : null
  if (!facts) throw new InboundRefusal('unknown_recipient')
  if (!s.disk.hasRoom()) throw new InboundRefusal('insufficient_storage').forInbox(facts.inboxId)
  // The same inbox named twice in one transaction gets one copy and uses one unit.
  const again = admitted.find((r) => r.inboxId === facts.inboxId)
  if (again) return again

  // Holding the unit checks the limits against stored counts plus every unit held now:
  // in memory (SQLite mode, without an await between check and hold) or in the database
  // under the organisation's lock (PostgreSQL mode, across machines).
  return s.reservations.hold({ facts, periods, limits: limitsFor(s, facts), isLive })
}

/**
 * admitRecipient bounded in time: past `boundMs` it fails with AdmissionPastDeadline, so
 * RCPT TO answers 451 then however many statements the admission waits on (a lookup and a
 * hold, each of which a silent database can keep until its own deadline: 24 s by default
 * before). The admission runs on; a unit it holds after the bound belongs to a recipient
 * already refused, so it is given back at once rather than attached. 0 means no bound.
 */
export async function admitRecipientWithin(s: Services, input: RecipientInput, boundMs: number): Promise<Reservation> {
  const admission = admitRecipient(s, input)
  if (boundMs <= 0) return admission
  let refused = false
  admission.then(
    (reservation) => {
      // One the transaction holds already (the same inbox named twice) stays with it.
      if (refused && !(input.admitted ?? []).includes(reservation)) s.reservations.release(reservation)
    },
    () => {}, // answered already: the 451 went out at the bound
  )
  let timer: ReturnType<typeof setTimeout> | undefined
  const bound = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      refused = true
      reject(new AdmissionPastDeadline(boundMs))
    }, boundMs)
  })
  try {
    return await Promise.race([admission, bound])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * The bound on one recipient's admission on this server: the
 * statement timeout plus the margin, or none when that is off.
 */
export const admissionBoundMs = (s: Services): number =>
  s.config.databaseStatementTimeoutMs > 0 ? s.config.databaseStatementTimeoutMs + ADMISSION_MARGIN_MS : 0
