/**
 * Concurrent slots held across machines, such as long polls (at most 10 per key and 30 per
 * organisation), which core/limits/long-poll-slots.ts counts in memory for one process. Each slot
 * is a row with a lease: its machine renews the slots still in use with a heartbeat, so the
 * slots of a machine that dies stop counting once their lease runs out (`leaseMs`, 30 s by
 * default, renewed every third of that), not when someone notices. A release that fails is
 * retried until the database answers (lease-book.ts), so a slot whose request ended during an
 * outage is free again within a second or so of the database's return.
 *
 * Acquiring takes a transaction-scoped advisory lock per subject (in one order everywhere),
 * so two machines cannot both see 29 held and both take the 30th. Times come from the clock
 * passed in: the server passes its own corrected to the database's (app/postgres/database-clock.ts),
 * so machines whose clocks disagree still agree on when a lease runs out.
 */
import { randomBytes } from 'node:crypto'
import type { Clock } from '../../clock.ts'
import type { Sql } from './client.ts'
import { createLeaseBook } from './lease-book.ts'
import type { CountedSubject } from './request-counter.ts'
import { sqlTransaction } from './transaction.ts'

export interface Lease {
  /**
   * Frees the slots; calling it twice is harmless. A failure is
   * retried in the background (and still rejects, for the log).
   */
  release(): Promise<void>
}

type Acquisition = { acquired: true; lease: Lease } | { acquired: false; full: string }

export interface SlotLeases {
  /** Takes one slot of every subject, or none when any is at its limit. */
  acquire(subjects: CountedSubject[]): Promise<Acquisition>
  /** Extends the leases of this machine's slots still in use; the timer of `start()` calls it. */
  renew(): Promise<void>
  /** Renews every `leaseMs / 3` until `stop()`. */
  start(): void
  stop(): void
  /** Slots in use on this machine, and releases waiting for a retry. */
  readonly held: number
  readonly pendingReleases: number
}

export interface SlotLeaseOptions {
  /** This machine's name in the table, unique per running process. */
  holder: string
  clock: Clock
  leaseMs?: number
}

export function createSlotLeases(sql: Sql, options: SlotLeaseOptions): SlotLeases {
  const { holder, clock } = options
  const leaseMs = options.leaseMs ?? 30_000

  // One entry per acquisition: its rows (one per subject) are renewed and released together.
  const book = createLeaseBook<string[]>({
    leaseMs,
    async renew(held) {
      const expiresAt = new Date(clock.now() + leaseMs).toISOString()
      await sql`update slot_leases set expires_at = ${expiresAt} where id in ${sql([...held.values()].flat())}`
    },
    async release(owed) {
      await sql`delete from slot_leases where id in ${sql([...owed.values()].flat())}`
    },
  })

  return {
    async acquire(subjects) {
      const now = new Date(clock.now()).toISOString()
      const expiresAt = new Date(clock.now() + leaseMs).toISOString()
      const ordered = [...subjects].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      const ids = ordered.map(() => `lease_${randomBytes(16).toString('hex')}`)
      const entry = ids[0]!
      // In use from before its rows exist, so the heartbeat never misses a slot being taken.
      book.hold(entry, ids)
      let full: string | null
      try {
        full = await sqlTransaction<null, string>(sql, async (tx, rollBackWith) => {
          for (const [i, subject] of ordered.entries()) {
            await tx`select pg_advisory_xact_lock(hashtextextended(${`pigeonhole.slots.${subject.id}`}, 0))`
            await tx`delete from slot_leases where subject_id = ${subject.id} and expires_at <= ${now}`
            const [row] = await tx<
              { held: number }[]
            >`select count(*)::int as held from slot_leases where subject_id = ${subject.id}`
            if ((row?.held ?? 0) >= subject.limit) return rollBackWith(subject.id)
            await tx`
              insert into slot_leases (id, subject_id, holder, expires_at)
              values (${ids[i]!}, ${subject.id}, ${holder}, ${expiresAt})`
          }
          return null
        })
      } catch (error) {
        // The commit may have happened before the connection failed: give the rows back.
        book.orphan(entry, ids)
        throw error
      }
      if (full !== null) {
        book.forget(entry)
        return { acquired: false, full }
      }
      let released = false
      return {
        acquired: true,
        lease: {
          async release() {
            if (released) return
            released = true
            await book.release(entry, ids)
          },
        },
      }
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
