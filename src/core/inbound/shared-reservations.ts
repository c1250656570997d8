/**
 * PostgreSQL mode's quota reservations: each unit held at RCPT TO is a row with a lease in
 * the database (storage/postgres/quota-reservations.ts), counted by every machine under the
 * organisation's lock, so the monthly quota and both bursts are exact across machines. The
 * storing transaction converts the row into stored counts (the PostgreSQL inbound adapter,
 * through InboundDelivery.hold); every other ending of the transaction releases it here. A
 * release that fails (the database unreachable) is logged and left to the lease, which stops
 * being renewed when this machine stops.
 */
import type {
  AdmissionFacts,
  InboundHold,
  InboundLimitCode,
  InboundLimits,
  InboundPeriods,
} from '../../storage/port/inbound.ts'
import { limitRefusal, quotaRefusal } from './admission.ts'
import type { InboundRefusal } from './refusal.ts'
import type { HoldRequest, QuotaHolds, Reservation } from './reservations.ts'

type HeldUnit = Omit<InboundHold, 'limits'>

/** The database side: createQuotaReservations in PostgreSQL mode. */
export interface SharedQuota {
  reserve(
    target: { organizationId: string; inboxId: string },
    limits: InboundLimits,
  ): Promise<{ reserved: true; reservation: HeldUnit } | { reserved: false; refusal: InboundLimitCode; limit: number }>
  release(unit: HeldUnit): Promise<void>
}

export class SharedInboundReservations implements QuotaHolds {
  /** Units handed out and not yet released, so a second release costs no round trip. */
  private readonly held = new Set<InboundHold>()

  constructor(
    private readonly quota: SharedQuota,
    private readonly releaseFailed: (error: unknown) => void,
  ) {}

  async hold({ facts, periods, limits, isLive }: HoldRequest): Promise<Reservation> {
    const result = await this.quota.reserve({ organizationId: facts.organizationId, inboxId: facts.inboxId }, limits)
    if (!result.reserved) throw quotaRefusal(result.refusal, result.limit).forInbox(facts.inboxId)
    const hold: InboundHold = { ...result.reservation, limits }
    const reservation: Reservation = {
      organizationId: facts.organizationId,
      inboxId: facts.inboxId,
      ...periods,
      isLive,
      hold,
    }
    if (isLive()) {
      this.held.add(hold)
      return reservation
    }
    // The transaction ended (QUIT, RSET, a dropped connection) while the unit was being taken:
    // nobody will release it later, so it goes back now.
    this.release(reservation)
    return reservation
  }

  release(reservation: Reservation): void {
    const hold = reservation.hold
    if (!hold || !this.held.delete(hold)) return
    this.quota.release(hold).catch(this.releaseFailed)
  }

  /** The transaction converts the row; until it commits, a rollback must still be able to release it. */
  stored(): void {}

  /** Converted in the database: nothing left to release. */
  committed(reservation: Reservation): void {
    if (reservation.hold) this.held.delete(reservation.hold)
  }

  /** Only for a delivery without a hold; held units are re-checked by the storing transaction. */
  recheck(facts: AdmissionFacts, _periods: InboundPeriods, limits: InboundLimits): InboundRefusal | null {
    return limitRefusal(limits, {
      month: facts.counts.monthReceived,
      inbox: facts.counts.inboxAccepted,
      org: facts.counts.orgAccepted,
    })
  }

  /** Units this machine holds now (tests, metrics). */
  get size(): number {
    return this.held.size
  }
}
