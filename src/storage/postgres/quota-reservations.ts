/**
 * Quota reservations across machines: the PostgreSQL counterpart of the in-memory
 * reservations of SMTP transactions in flight (core/inbound/reservations.ts, counted by
 * core/inbound/admission.ts). A recipient admitted at RCPT TO holds one unit of its
 * organisation's monthly quota, its inbox's five-minute burst and its organisation's
 * five-minute burst until the message is stored or the transaction ends.
 *
 * Each reservation is a row with a lease. Admission (one call of a server-side function)
 * takes the organisation's advisory lock (the inbox belongs to it, so one lock covers all three
 * counts), deletes the expired rows no other transaction has locked, and counts the stored
 * usage plus the rows left of the same month and bucket; it inserts the row only when every
 * count stays within its limit. Two machines therefore cannot both see one unit left and both
 * take it. The holds of one organisation made while its call runs go together in the next call,
 * made one after the other under one lock. Storing converts the reservation in the storing
 * transaction: the row goes and the stored counts go up together in one commit, so a unit is
 * never counted twice nor dropped in between, and a unit still held needs no lock for it; a
 * re-check does, and takes it. A machine that dies leaves its rows to run out with its lease,
 * not forever. While it lives, its heartbeat renews only the units still held, and a release
 * that fails is retried until the database answers (lease-book.ts): a transaction
 * that ended during an outage does not keep its unit once the database is back.
 *
 * Which limits apply (per-organisation overrides, configuration) stays in core; callers pass
 * them in. Times come from the clock passed in (the server's, corrected to the database's).
 */
import { randomBytes } from 'node:crypto'
import type { Clock } from '../../clock.ts'
import type { Queryable, Sql } from './client.ts'
import { createLeaseBook } from './lease-book.ts'
import { textArray } from './array-literal.ts'

const FIVE_MINUTES = 5 * 60_000
/** The most holds of one organisation sent in one call; more wait for the next. */
const MAX_HOLDS_PER_CALL = 64
/**
 * Reservations this machine removes (stored or released) between two vacuums of the table it
 * asks for. Every stored message inserts a row and deletes it a moment later, and each hold
 * walks its organisation's index entries, the dead ones too, until a vacuum removes them.
 * Autovacuum looks at a database once a minute by default (autovacuum_naptime), by which time a
 * busy machine has left tens of thousands: measured on the bench, the database's CPU per
 * message rose by a half within 40 seconds. A vacuum of the table, whose live rows are only the
 * units in flight, takes a few milliseconds.
 */
const VACUUM_AFTER_REMOVALS = 512

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

type ReserveResult =
  | { reserved: true; reservation: QuotaReservation }
  | { reserved: false; refusal: QuotaRefusal; limit: number }
type ConvertResult = { counted: true } | { counted: false; refusal: QuotaRefusal; limit: number }

export interface PendingConversion {
  /**
   * Decides and counts, once the statements of beginConvert answered: the unit's count goes
   * into `counts` (sent by the caller once, with its batch's). A re-check (the period turned, the
   * lease ran out) reads the stored counts and adds what `counts` holds so far, so it includes the
   * batch's earlier units without sending them early (one send keeps the counter rows' lock order).
   */
  finish(limits: QuotaLimits, counts: StoredCounts): Promise<ConvertResult>
}

export interface QuotaReservations {
  /** Holds one unit for a message to `target`, or refuses with the first limit that has no room. */
  reserve(target: { organizationId: string; inboxId: string }, limits: QuotaLimits): Promise<ReserveResult>
  /**
   * Frees a unit whose message will not be stored; twice is harmless. A failure is retried in
   * the background (and still rejects, for the log).
   */
  release(reservation: QuotaReservation): Promise<void>
  /**
   * Inside the transaction that stores the message: deletes the reservation and counts the
   * message in the stored usage. When the month or bucket has turned since admission, or the
   * lease ran out (another machine may have used the unit), the unit is checked again against
   * the current counts and may be refused; the caller then does not store the message.
   */
  convert(tx: Queryable, reservation: QuotaReservation, limits: QuotaLimits): Promise<ConvertResult>
  /**
   * convert for a batch's units, in two steps, so its first statement goes out with the
   * caller's: the reservations' delete, one statement however many units, sent at the call
   * (`answered` settles when it has answered, and, when some unit must be re-checked, once its
   * organisations' locks are taken too); then `finish` per unit decides and counts, as convert
   * does. A unit still held (its lease live, its period unchanged) takes no lock: the storing
   * commit removes its row and counts it at once, so a hold's count sees one or the other. A
   * caller that learns meanwhile that a message will not be stored (its inbox is gone) skips its
   * `finish`: the unit is then freed with nothing counted, and the caller's later release is
   * harmless.
   */
  beginConvert(tx: Queryable, reservations: QuotaReservation[]): { answered: Promise<void>; units: PendingConversion[] }
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
  /** Removals between two vacuums of the table; VACUUM_AFTER_REMOVALS by default. */
  vacuumAfter?: number
  /** How long a dead machine's reservations keep counting; 30 s by default, renewed every third. */
  leaseMs?: number
}

/** A hold on its way to the database: its row's values, and its caller's answer. */
interface Hold {
  reservation: QuotaReservation
  now: string
  expiresAt: string
  limits: QuotaLimits
  settle: { resolve(refusal: QuotaRefusal | null): void; reject(error: unknown): void }
}

const monthOf = (ms: number): string => new Date(ms).toISOString().slice(0, 7)
const bucketOf = (ms: number): string => new Date(Math.floor(ms / FIVE_MINUTES) * FIVE_MINUTES).toISOString()

interface Used {
  month_used: number
  inbox_used: number
  org_used: number
}

/**
 * Stored usage plus held reservations for one inbox in `month` and `bucket`, as the hold's
 * function counts them: run under the organisation's lock, it first deletes the organisation's
 * expired reservations that no other transaction has locked, then counts every row left. An
 * expired row another transaction has locked is being converted or released by it: counted,
 * as any unit in flight is, so a store that converted it without a re-check is never missed.
 * Both statements are sent at once (`execute()`), run in the order sent.
 */
function usedNow(
  tx: Queryable,
  target: { organizationId: string; inboxId: string },
  month: string,
  bucket: string,
  now: string,
): Promise<Used> {
  const { organizationId: org, inboxId: inbox } = target
  const tidied = tx`
    delete from quota_reservations where id in (
      select id from quota_reservations where organization_id = ${org} and expires_at <= ${now}
      for update skip locked)`.execute()
  // One pass over the organisation's reservations for the three counts, as the hold's function does.
  const used = tx<Used[]>`
    select
      coalesce((select received from monthly_email_usage where organization_id = ${org} and month = ${month}), 0)
        + held.month as month_used,
      coalesce((select accepted from inbound_bursts where subject_id = ${inbox} and bucket_starts_at = ${bucket}), 0)
        + held.inbox as inbox_used,
      coalesce((select accepted from inbound_bursts where subject_id = ${org} and bucket_starts_at = ${bucket}), 0)
        + held.organization as org_used
    from (select
        count(*) filter (where month = ${month}) as month,
        count(*) filter (where inbox_id = ${inbox} and bucket_starts_at = ${bucket}) as inbox,
        count(*) filter (where bucket_starts_at = ${bucket}) as organization
      from quota_reservations where organization_id = ${org}) as held`.execute()
  return Promise.all([tidied, used]).then(([, [row]]) => ({
    month_used: Number(row!.month_used),
    inbox_used: Number(row!.inbox_used),
    org_used: Number(row!.org_used),
  }))
}

const limitOf = (refusal: QuotaRefusal, limits: QuotaLimits): number =>
  refusal === 'monthly_quota_exceeded'
    ? limits.monthlyEmails
    : refusal === 'inbox_burst_exceeded'
      ? limits.inboxBurst
      : limits.orgBurst

function refusalFor(used: Used, limits: QuotaLimits): { refusal: QuotaRefusal; limit: number } | null {
  if (used.month_used >= limits.monthlyEmails) return { refusal: 'monthly_quota_exceeded', limit: limits.monthlyEmails }
  if (used.inbox_used >= limits.inboxBurst) return { refusal: 'inbox_burst_exceeded', limit: limits.inboxBurst }
  if (used.org_used >= limits.orgBurst) return { refusal: 'organization_burst_exceeded', limit: limits.orgBurst }
  return null
}

/**
 * Stored messages counted by a batch: the monthly usage and both burst buckets, added up per
 * row and sent as two statements (increments in place), however many messages. The one place
 * inbound mail is counted in PostgreSQL mode: convert() adds a held unit, the inbound adapter a
 * delivery without one. Rows are sent sorted (the months, then the bursts), one lock order for
 * every batch; each is counted by the organisation's lock too when its units are held.
 */
export class StoredCounts {
  private months = new Map<string, { organizationId: string; month: string; count: number }>()
  private bursts = new Map<string, { subjectId: string; bucket: string; count: number }>()

  add(target: { organizationId: string; inboxId: string }, month: string, bucket: string): void {
    const bump = <T extends { count: number }>(rows: Map<string, T>, key: string, row: Omit<T, 'count'>) => {
      const found = rows.get(key)
      if (found) found.count++
      else rows.set(key, { ...row, count: 1 } as T)
    }
    bump(this.months, `${target.organizationId}\n${month}`, { organizationId: target.organizationId, month })
    bump(this.bursts, `${target.inboxId}\n${bucket}`, { subjectId: target.inboxId, bucket })
    bump(this.bursts, `${target.organizationId}\n${bucket}`, { subjectId: target.organizationId, bucket })
  }

  /** What add() holds for `target`'s month and bucket and not yet sent, as a re-check counts it. */
  pending(target: { organizationId: string; inboxId: string }, month: string, bucket: string): Used {
    return {
      month_used: this.months.get(`${target.organizationId}\n${month}`)?.count ?? 0,
      inbox_used: this.bursts.get(`${target.inboxId}\n${bucket}`)?.count ?? 0,
      org_used: this.bursts.get(`${target.organizationId}\n${bucket}`)?.count ?? 0,
    }
  }

  /**
   * Sends the counts added since the last send (nothing when none was), and forgets them;
   * answers when they are counted.
   */
  send(tx: Queryable): Promise<unknown> {
    const byKey = <T>(rows: Map<string, T>) =>
      [...rows.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, row]) => row)
    const months = byKey(this.months)
    const bursts = byKey(this.bursts)
    this.months = new Map()
    this.bursts = new Map()
    const sent: Promise<unknown>[] = []
    if (months.length > 0)
      sent.push(
        tx`
        insert into monthly_email_usage (organization_id, month, received)
        select * from unnest(
          ${textArray(months.map((row) => row.organizationId))}::text[],
          ${textArray(months.map((row) => row.month))}::text[],
          ${textArray(months.map((row) => row.count))}::int[])
        on conflict (organization_id, month)
          do update set received = monthly_email_usage.received + excluded.received`.execute(),
      )
    if (bursts.length > 0)
      sent.push(
        tx`
        insert into inbound_bursts (subject_id, bucket_starts_at, accepted)
        select * from unnest(
          ${textArray(bursts.map((row) => row.subjectId))}::text[],
          ${textArray(bursts.map((row) => row.bucket))}::timestamptz[],
          ${textArray(bursts.map((row) => row.count))}::int[])
        on conflict (subject_id, bucket_starts_at)
          do update set accepted = inbound_bursts.accepted + excluded.accepted`.execute(),
      )
    // Marked handled: the caller awaits it with the rest of its transaction, maybe after an
    // earlier failure made it stop awaiting.
    const all = Promise.all(sent)
    all.catch(() => {})
    return all
  }
}

export function createQuotaReservations(sql: Sql, options: QuotaReservationOptions): QuotaReservations {
  const { holder, clock } = options
  const leaseMs = options.leaseMs ?? 30_000
  const vacuumAfter = options.vacuumAfter ?? VACUUM_AFTER_REMOVALS

  // The table's upkeep (see VACUUM_AFTER_REMOVALS). SKIP_LOCKED: while another machine's vacuum
  // of it runs, this one is skipped, not queued. A role that does not own the table gets a
  // warning from the server and no vacuum: autovacuum then does it, later. A failure (the
  // database away) costs nothing but the next try, after as many removals again.
  let removedSinceVacuum = 0
  let vacuuming = false
  const removed = (count: number) => {
    removedSinceVacuum += count
    if (removedSinceVacuum < vacuumAfter || vacuuming) return
    removedSinceVacuum = 0
    vacuuming = true
    void sql`vacuum (skip_locked, truncate false) quota_reservations`
      .simple()
      .catch(() => {})
      .finally(() => {
        vacuuming = false
      })
  }

  const book = createLeaseBook<true>({
    leaseMs,
    async renew(held) {
      const expiresAt = new Date(clock.now() + leaseMs).toISOString()
      await sql`update quota_reservations set expires_at = ${expiresAt} where id in ${sql([...held.keys()])}`
    },
    async release(owed) {
      await sql`delete from quota_reservations where id in ${sql([...owed.keys()])}`
      removed(owed.size)
    },
  })

  // One call in flight per organisation: holds that arrive meanwhile wait here and go together
  // in the next call (pigeonhole_quota_hold_many), instead of each waiting on a connection of
  // its own for the organisation's lock that the call in flight holds. Their answers are those
  // of the same holds made one after the other, in the order they arrived.
  const waiting = new Map<string, Hold[]>()

  const sendHolds = async (organizationId: string, holds: Hold[]): Promise<void> => {
    try {
      const refusals = holds.length === 1 ? [await holdOne(holds[0]!)] : await holdMany(organizationId, holds)
      for (const [i, hold] of holds.entries()) hold.settle.resolve(refusals[i] ?? null)
    } catch (error) {
      for (const hold of holds) hold.settle.reject(error)
    }
    const next = waiting.get(organizationId)!
    if (next.length === 0) waiting.delete(organizationId)
    else void sendHolds(organizationId, next.splice(0, MAX_HOLDS_PER_CALL))
  }

  // One statement, one round trip, its own transaction: the function (a migration, see
  // drizzle/postgres) takes the organisation's lock, tidies the expired rows under it, counts,
  // and inserts the row only when every count leaves room. Its commit does not wait for its
  // flush: the lock is held through the commit, and a flush per recipient would hold every other
  // hold and store of the organisation behind a disk write. A hold that a database crash loses
  // costs nothing exact: the store finds its row gone and checks the counts again under the same
  // lock (finish, below).
  const holdOne = async ({ reservation: r, now, expiresAt, limits }: Hold): Promise<QuotaRefusal | null> => {
    const [row] = await sql<{ refusal: QuotaRefusal | null }[]>`
      select pigeonhole_quota_hold(${r.id}, ${r.organizationId}, ${r.inboxId}, ${r.month}, ${r.bucketStartsAt},
        ${holder}, ${now}, ${expiresAt}, ${limits.monthlyEmails}, ${limits.inboxBurst}, ${limits.orgBurst}) as refusal`
    return row!.refusal
  }

  const holdMany = async (organizationId: string, holds: Hold[]): Promise<(QuotaRefusal | null)[]> => {
    const column = (pick: (hold: Hold) => string | number) => textArray(holds.map(pick))
    const rows = await sql<{ refusal: QuotaRefusal | null }[]>`
      select refusal from unnest(pigeonhole_quota_hold_many(
        ${column((h) => h.reservation.id)}::text[], ${organizationId},
        ${column((h) => h.reservation.inboxId)}::text[], ${column((h) => h.reservation.month)}::text[],
        ${column((h) => h.reservation.bucketStartsAt)}::timestamptz[], ${holder},
        ${column((h) => h.now)}::timestamptz[], ${column((h) => h.expiresAt)}::timestamptz[],
        ${column((h) => h.limits.monthlyEmails)}::bigint[], ${column((h) => h.limits.inboxBurst)}::bigint[],
        ${column((h) => h.limits.orgBurst)}::bigint[])) with ordinality as answer(refusal, n)
      order by n`
    return rows.map((row) => row.refusal)
  }

  const hold = (unit: Omit<Hold, 'settle'>): Promise<QuotaRefusal | null> =>
    new Promise((resolve, reject) => {
      const organizationId = unit.reservation.organizationId
      const queued = { ...unit, settle: { resolve, reject } }
      const next = waiting.get(organizationId)
      if (next) next.push(queued)
      else {
        waiting.set(organizationId, [])
        void sendHolds(organizationId, [queued])
      }
    })

  const beginConvert = (tx: Queryable, reservations: QuotaReservation[]) => {
    // The storing transaction deletes the rows; should it roll back, the caller releases the units.
    for (const reservation of reservations) book.forget(reservation.id)
    removed(reservations.length)
    const nowMs = clock.now()
    const now = new Date(nowMs).toISOString()
    const month = monthOf(nowMs)
    const bucket = bucketOf(nowMs)
    const stillHeld = (reservation: QuotaReservation, live: boolean | undefined) =>
      live === true && reservation.month === month && reservation.bucketStartsAt === bucket
    // The delete, sent now: it goes out with whatever the caller sends in the same turn. A unit
    // still held needs no lock: a hold counting meanwhile sees its row (the delete is not
    // committed) or, after the commit, its stored count, never neither nor both, and a hold's
    // tidy skips a row this transaction has locked. Units to re-check count under their
    // organisations' locks, taken (sorted, one statement) before the caller sends any count, so
    // every store locks counter rows in one order, after the organisations' locks.
    const deleted = tx<{ id: string; live: boolean }[]>`delete from quota_reservations
         where id = any(${textArray(reservations.map((reservation) => reservation.id))}::text[])
         returning id, expires_at > ${now} as live`
      .execute()
      .then(async (rows) => {
        const live = new Map(rows.map((row) => [row.id, row.live]))
        const organizations = [
          ...new Set(
            reservations
              .filter((reservation) => !stillHeld(reservation, live.get(reservation.id)))
              .map((reservation) => reservation.organizationId),
          ),
        ].sort()
        if (organizations.length > 0)
          await tx`select count(pg_advisory_xact_lock(hashtextextended('pigeonhole.quota.' || o, 0)))
             from unnest(${textArray(organizations)}::text[]) as t(o)`.execute()
        return live
      })
    const units = reservations.map(
      (reservation): PendingConversion => ({
        async finish(limits, counts) {
          // Its own row is gone, so the re-check does not count the unit against itself.
          if (!stillHeld(reservation, (await deleted).get(reservation.id))) {
            const stored = await usedNow(tx, reservation, month, bucket, now)
            const pending = counts.pending(reservation, month, bucket)
            const used = {
              month_used: stored.month_used + pending.month_used,
              inbox_used: stored.inbox_used + pending.inbox_used,
              org_used: stored.org_used + pending.org_used,
            }
            const refused = refusalFor(used, limits)
            if (refused) return { counted: false, ...refused }
          }
          counts.add(reservation, month, bucket)
          return { counted: true }
        },
      }),
    )
    return { answered: deleted.then(() => {}), units }
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
        const refusal = await hold({ reservation, now, expiresAt, limits })
        result = refusal
          ? { reserved: false, refusal, limit: limitOf(refusal, limits) }
          : { reserved: true, reservation }
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

    async convert(tx, reservation, limits) {
      const counts = new StoredCounts()
      const converted = await beginConvert(tx, [reservation]).units[0]!.finish(limits, counts)
      await counts.send(tx)
      return converted
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
