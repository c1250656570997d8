/**
 * Quota reservations across machines: the PostgreSQL counterpart of the in-memory
 * reservations of SMTP transactions in flight (core/inbound/reservations.ts, counted by
 * core/inbound/admission.ts). A recipient admitted at RCPT TO holds one unit of its
 * organisation's monthly quota, its inbox's five-minute burst and its organisation's
 * five-minute burst until the message is stored or the transaction ends.
 *
 * Each reservation is a row with a lease. Admission takes the organisation's advisory lock
 * (the inbox belongs to it, so one lock covers all three counts) and, in one statement,
 * counts the stored usage plus the live reservations of the same month and bucket; it
 * inserts the row only when every count stays within its limit. Two machines therefore
 * cannot both see one unit left and both take it. Storing converts the reservation in the
 * storing transaction: the row goes and the stored counts go up together, so a unit is never
 * counted twice nor dropped in between. A machine that dies leaves its rows to run out with
 * its lease, not forever. While it lives, its heartbeat renews only the units still held, and
 * a release that fails is retried until the database answers (lease-book.ts): a transaction
 * that ended during an outage does not keep its unit once the database is back.
 *
 * Which limits apply (per-organisation overrides, configuration) stays in core; callers pass
 * them in. Times come from the clock passed in (the server's, corrected to the database's).
 */
import { randomBytes } from 'node:crypto'
import type { Clock } from '../../clock.ts'
import type { Queryable, Sql } from './client.ts'
import { createLeaseBook } from './lease-book.ts'
import { sqlTransaction } from './transaction.ts'

const FIVE_MINUTES = 5 * 60_000

interface QuotaLimits {
  monthlyEmails: number
  inboxBurst: number
  orgBurst: number
}

/** The spec's SMTP refusal codes, checked in this order (as core does in SQLite mode). */
type QuotaRefusal = 'monthly_quota_exceeded' | 'inbox_burst_exceeded' | 'organization_burst_exceeded'

export interface QuotaReservation {
  id: string
  organizationId: string
  inboxId: string
  /** 'YYYY-MM' at admission. */
  month: string
  /** The five-minute bucket at admission, RFC 3339. */
  bucketStartsAt: string
}

type ReserveResult = { reserved: true; reservation: QuotaReservation } | { reserved: false; refusal: QuotaRefusal; limit: number }
type ConvertResult = { counted: true } | { counted: false; refusal: QuotaRefusal; limit: number }

export interface PendingConversion {
  answered: Promise<void>
  finish(limits: QuotaLimits, sent?: Promise<unknown>[]): Promise<ConvertResult>
}

export interface QuotaReservations {
  /** Holds one unit for a message to `target`, or refuses with the first limit that has no room. */
  reserve(target: { organizationId: string; inboxId: string }, limits: QuotaLimits): Promise<ReserveResult>
  /** Frees a unit whose message will not be stored; twice is harmless. A failure is retried in the background (and still rejects, for the log). */
  release(reservation: QuotaReservation): Promise<void>
  /**
   * Inside the transaction that stores the message: deletes the reservation and counts the
   * message in the stored usage. When the month or bucket has turned since admission, or the
   * lease ran out (another machine may have used the unit), the unit is checked again against
   * the current counts and may be refused; the caller then does not store the message.
   * With `sent`, the counting statements are sent but not awaited: their promise goes into
   * `sent` for the caller to await with the statements it sends next (one round trip for all);
   * the transaction must not commit before it settles.
   */
  convert(tx: Queryable, reservation: QuotaReservation, limits: QuotaLimits, sent?: Promise<unknown>[]): Promise<ConvertResult>
  /**
   * convert in two steps, so its first statements can go out with the caller's: the
   * organisation's lock and the reservation's delete are sent at the call (`answered` settles
   * when both have answered); `finish` decides and counts, as convert does. A caller that
   * learns meanwhile that the message will not be stored (its inbox is gone) skips `finish`:
   * the unit is then freed with nothing counted, and the caller's later release is harmless.
   */
  beginConvert(tx: Queryable, reservation: QuotaReservation): PendingConversion
  /** Extends the reservations this machine still holds; the timer of `start()` calls it. */
  renew(): Promise<void>
  start(): void
  stop(): void
  /** Units held on this machine, and releases waiting for a retry. */
  readonly held: number
  readonly pendingReleases: number
}

export interface QuotaReservationOptions {
  /** This machine's name in the table, unique per running process. */
  holder: string
  clock: Clock
  /** How long a dead machine's reservations keep counting; 30 s by default, renewed every third. */
  leaseMs?: number
}

const monthOf = (ms: number): string => new Date(ms).toISOString().slice(0, 7)
const bucketOf = (ms: number): string => new Date(Math.floor(ms / FIVE_MINUTES) * FIVE_MINUTES).toISOString()
/** Sent at once (`execute()`): see usedNow. */
const lockOrganization = (tx: Queryable, organizationId: string) => tx`select pg_advisory_xact_lock(hashtextextended(${`pigeonhole.quota.${organizationId}`}, 0))`.execute()

interface Used {
  month_used: number
  inbox_used: number
  org_used: number
}

/**
 * Stored usage plus live reservations for one inbox in `month` and `bucket`, in one statement.
 * Run under the organisation's lock; a reservation counts while its lease has not run out.
 * The statement is sent at once (`execute()`), so a caller may send it in one go with the
 * lock it must follow (postgres.js pipelines a connection's statements, run in the order sent).
 */
function usedNow(tx: Queryable, target: { organizationId: string; inboxId: string }, month: string, bucket: string, now: string): Promise<Used> {
  const { organizationId: org, inboxId: inbox } = target
  return tx<Used[]>`
    select
      coalesce((select received from monthly_email_usage where organization_id = ${org} and month = ${month}), 0)
        + (select count(*) from quota_reservations where organization_id = ${org} and month = ${month} and expires_at > ${now}) as month_used,
      coalesce((select accepted from inbound_bursts where subject_id = ${inbox} and bucket_starts_at = ${bucket}), 0)
        + (select count(*) from quota_reservations where organization_id = ${org} and inbox_id = ${inbox} and bucket_starts_at = ${bucket} and expires_at > ${now}) as inbox_used,
      coalesce((select accepted from inbound_bursts where subject_id = ${org} and bucket_starts_at = ${bucket}), 0)
        + (select count(*) from quota_reservations where organization_id = ${org} and bucket_starts_at = ${bucket} and expires_at > ${now}) as org_used`
    .execute()
    .then(([row]) => ({ month_used: Number(row!.month_used), inbox_used: Number(row!.inbox_used), org_used: Number(row!.org_used) }))
}

function refusalFor(used: Used, limits: QuotaLimits): { refusal: QuotaRefusal; limit: number } | null {
  if (used.month_used >= limits.monthlyEmails) return { refusal: 'monthly_quota_exceeded', limit: limits.monthlyEmails }
  if (used.inbox_used >= limits.inboxBurst) return { refusal: 'inbox_burst_exceeded', limit: limits.inboxBurst }
  if (used.org_used >= limits.orgBurst) return { refusal: 'organization_burst_exceeded', limit: limits.orgBurst }
  return null
}

/**
 * Counts one stored message for `target` in `month` and `bucket`: the monthly usage and both
 * burst buckets, as increments in place. The one place inbound mail is counted in PostgreSQL
 * mode: convert() calls it for a held unit, the inbound adapter for a delivery without one.
 */
export async function countStoredMessage(tx: Queryable, target: { organizationId: string; inboxId: string }, month: string, bucket: string): Promise<void> {
  // Sent together, at the call (the caller may await it with statements it sends after) (postgres.js pipelines one connection's statements, run in the order sent):
  // the organisation's month, then the inbox's and the organisation's bursts, one lock order.
  const burst = (subject: string) =>
    tx`
    insert into inbound_bursts (subject_id, bucket_starts_at, accepted) values (${subject}, ${bucket}, 1)
    on conflict (subject_id, bucket_starts_at) do update set accepted = inbound_bursts.accepted + 1`.execute()
  await Promise.all([
    tx`
      insert into monthly_email_usage (organization_id, month, received) values (${target.organizationId}, ${month}, 1)
      on conflict (organization_id, month) do update set received = monthly_email_usage.received + 1`.execute(),
    burst(target.inboxId),
    burst(target.organizationId),
  ])
}

export function createQuotaReservations(sql: Sql, options: QuotaReservationOptions): QuotaReservations {
  const { holder, clock } = options
  const leaseMs = options.leaseMs ?? 30_000

  const book = createLeaseBook<true>({
    leaseMs,
    async renew(held) {
      const expiresAt = new Date(clock.now() + leaseMs).toISOString()
      await sql`update quota_reservations set expires_at = ${expiresAt} where id in ${sql([...held.keys()])}`
    },
    async release(owed) {
      await sql`delete from quota_reservations where id in ${sql([...owed.keys()])}`
    },
  })

  const beginConvert = (tx: Queryable, reservation: QuotaReservation): PendingConversion => {
    // The storing transaction deletes the row; should it roll back, the caller releases the unit.
    book.forget(reservation.id)
    const nowMs = clock.now()
    const now = new Date(nowMs).toISOString()
    const month = monthOf(nowMs)
    const bucket = bucketOf(nowMs)
    // The lock and the delete under it, sent now: they go out with whatever the caller sends
    // in the same turn and run in the order sent.
    const deleted = Promise.all([
      lockOrganization(tx, reservation.organizationId),
      tx<{ live: boolean }[]>`delete from quota_reservations where id = ${reservation.id} returning expires_at > ${now} as live`.execute(),
    ]).then(([, rows]) => rows[0])
    return {
      answered: deleted.then(() => {}),
      async finish(limits, sent) {
        const held = await deleted
        // Its own row is gone, so the re-check does not count the unit against itself.
        const stillHeld = held?.live === true && reservation.month === month && reservation.bucketStartsAt === bucket
        if (!stillHeld) {
          const refused = refusalFor(await usedNow(tx, reservation, month, bucket, now), limits)
          if (refused) return { counted: false, ...refused }
        }
        const counting = countStoredMessage(tx, reservation, month, bucket)
        if (sent) sent.push(counting)
        else await counting
        return { counted: true }
      },
    }
  }

  return {
    async reserve(target, limits) {
      const nowMs = clock.now()
      const now = new Date(nowMs).toISOString()
      const reservation: QuotaReservation = {
        id: `qres_${randomBytes(16).toString('hex')}`,
        organizationId: target.organizationId,
        inboxId: target.inboxId,
        month: monthOf(nowMs),
        bucketStartsAt: bucketOf(nowMs),
      }
      const expiresAt = new Date(nowMs + leaseMs).toISOString()
      book.hold(reservation.id, true)
      let result: ReserveResult
      try {
        result = await sqlTransaction<ReserveResult, ReserveResult>(sql, async (tx, rollBackWith) => {
          // One round trip for the four (run in the order sent): the lock, a tidy under it (rows
          // of dead machines no longer count anyway), the counts read after both, and the
          // reservation's row, which the counts do not see. When the counts leave no room the
          // transaction rolls back, row and tidy alike.
          // The hold's commit does not wait for its flush: it held the organisation's lock (which
          // every other hold and store of the organisation waits for) through a disk write, per
          // recipient. A hold that a database crash loses costs nothing exact: the store finds
          // its row gone and checks the counts again under the lock (finish, below).
          const [, , , used] = await Promise.all([
            tx`set local synchronous_commit = off`.execute(),
            lockOrganization(tx, target.organizationId),
            tx`delete from quota_reservations where organization_id = ${target.organizationId} and expires_at <= ${now}`.execute(),
            usedNow(tx, target, reservation.month, reservation.bucketStartsAt, now),
            tx`
              insert into quota_reservations (id, organization_id, inbox_id, month, bucket_starts_at, holder, expires_at)
              values (${reservation.id}, ${reservation.organizationId}, ${reservation.inboxId}, ${reservation.month}, ${reservation.bucketStartsAt}, ${holder}, ${expiresAt})`.execute(),
          ])
          const refused = refusalFor(used, limits)
          if (refused) return rollBackWith({ reserved: false, ...refused })
          return { reserved: true, reservation }
        })
      } catch (error) {
        // The commit may have happened before the connection failed: give the unit back.
        book.orphan(reservation.id, true)
        throw error
      }
      if (!result.reserved) book.forget(reservation.id)
      return result
    },

    release(reservation) {
      return book.release(reservation.id, true)
    },

    beginConvert,

    convert(tx, reservation, limits, sent) {
      return beginConvert(tx, reservation).finish(limits, sent)
    },

    renew: book.renew,
    start: book.start,
    stop: book.stop,
    get held() {
      return book.held
    },
    get pendingReleases() {
      return book.pending
    },
  }
}
