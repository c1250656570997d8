/**
 * Quota reservations of SMTP transactions in flight. A recipient accepted at RCPT TO holds
 * one unit of its organisation's monthly quota and of the burst buckets until its message
 * is stored (the reservation turns into committed counts in the database) or the
 * transaction ends without a message (RSET, QUIT, dropped connection, refused data).
 * They live in memory: a crash ends every transaction, and with it every reservation.
 */
export interface Reservation {
  organizationId: string
  inboxId: string
  month: string
  bucket: string
  /** False once the SMTP transaction that made it is over (checked lazily, so RSET needs no hook). */
  isLive(): boolean
}

export class InboundReservations {
  private readonly live = new Set<Reservation>()

  add(reservation: Reservation): void {
    this.live.add(reservation)
  }

  release(reservation: Reservation): void {
    this.live.delete(reservation)
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
