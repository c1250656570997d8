/**
 * Quota reservations of SMTP transactions in flight. A recipient accepted at RCPT TO holds
 * one unit of its organisation's monthly quota and of the burst buckets until its message
 * is stored (the reservation turns into committed counts in the database) or the
 * transaction ends without a message (RSET, QUIT, dropped connection, refused data).
 *
 * Two implementations of QuotaHolds: InboundReservations (here, SQLite mode) keeps them in
 * this process's memory, where a crash ends every transaction and with it every reservation;
 * SharedInboundReservations (./shared-reservations.ts, PostgreSQL mode) keeps them in the
 * database with a lease, so every machine counts the others' units.
 */
import type { AdmissionFacts, InboundHold, InboundLimits, InboundPeriods } from '../../storage/port/inbound.ts'
import { limitRefusal } from './admission.ts'
import type { InboundRefusal } from './refusal.ts'

export interface Reservation {
  organizationId: string
  inboxId: string
  month: string
  bucket: string
  /** False once the SMTP transaction that made it is over (checked lazily, so RSET needs no hook). */
  isLive(): boolean
  /** PostgreSQL mode: the unit held in the database, which the storing transaction converts. */
  hold?: InboundHold
}

export interface HoldRequest {
  /** The stored counts and the inbox, read for this admission. */
  facts: AdmissionFacts
  periods: InboundPeriods
  /** The limits in force for the inbox (overrides applied). */
  limits: InboundLimits
  isLive: () => boolean
}

/** What admission and storing need from the units in flight, whichever mode holds them. */
export interface QuotaHolds {
  /** Checks the limits and holds one unit, or throws the spec's refusal (an InboundRefusal). */
  hold(request: HoldRequest): Reservation | Promise<Reservation>
  /** Gives a unit back; twice, or after it was stored, is harmless. */
  release(reservation: Reservation): void
  /**
   * SQLite mode's re-check when a period turned between RCPT TO and the store, with the
   * reservation already released: refusal or null. (Held units in PostgreSQL mode are
   * re-checked by the storing transaction itself.)
   */
  recheck(facts: AdmissionFacts, periods: InboundPeriods, limits: InboundLimits): InboundRefusal | null
  /** Inside the storing transaction, its copy written: the unit is about to be a stored count. */
  stored(reservation: Reservation): void
  /** After the storing transaction committed with this copy. */
  committed(reservation: Reservation): void
  /** Units held by this process now. */
  readonly size: number
}

export class InboundReservations implements QuotaHolds {
  private readonly live = new Set<Reservation>()

  hold({ facts, periods, limits, isLive }: HoldRequest): Reservation {
    // Check and add without an await between them: no other admission slips in.
    const refusal = this.recheck(facts, periods, limits)
    if (refusal) throw refusal.forInbox(facts.inboxId)
    const reservation: Reservation = {
      organizationId: facts.organizationId,
      inboxId: facts.inboxId,
      ...periods,
      isLive,
    }
    this.live.add(reservation)
    return reservation
  }

  release(reservation: Reservation): void {
    this.live.delete(reservation)
  }

  /** Released at once: later jobs of the same group commit must not count it twice (stored and reserved). */
  stored(reservation: Reservation): void {
    this.live.delete(reservation)
  }

  committed(): void {}

  recheck(facts: AdmissionFacts, { month, bucket }: InboundPeriods, limits: InboundLimits): InboundRefusal | null {
    const org = facts.organizationId
    return limitRefusal(limits, {
      month: facts.counts.monthReceived + this.count((r) => r.organizationId === org && r.month === month),
      inbox: facts.counts.inboxAccepted + this.count((r) => r.inboxId === facts.inboxId && r.bucket === bucket),
      org: facts.counts.orgAccepted + this.count((r) => r.organizationId === org && r.bucket === bucket),
    })
  }

  /** Live reservations matching `filter`; dead ones are dropped on the way. */
  count(filter: (reservation: Reservation) => boolean): number {
    let n = 0
    for (const reservation of this.live) {
      if (!reservation.isLive()) this.live.delete(reservation)
      else if (filter(reservation)) n++
    }
    return n
  }

  get size(): number {
    return this.count(() => true)
  }
}
