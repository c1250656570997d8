/**
 * Concurrent slots held across machines, such as long polls (at most 10 per key and 30 per
 * organisation), which core/long-poll-slots.ts counts in memory for one process. Each slot
 * is a row with a lease: its machine renews all of its leases with a heartbeat, so the slots
 * of a machine that dies stop counting once their lease runs out (`leaseMs`, 30 s by default,
 * renewed every third of that), not when someone notices.
 *
 * Acquiring takes a transaction-scoped advisory lock per subject (in one order everywhere),
 * so two machines cannot both see 29 held and both take the 30th. Times come from the
 * injected clock, so machines' clocks must agree to well within a lease (NTP does).
 */
import { randomBytes } from 'node:crypto'
import type { Clock } from '../../clock.ts'
import type { Sql } from './client.ts'
import { leaseHeartbeat } from './lease-heartbeat.ts'
import type { CountedSubject } from './request-counter.ts'

export interface Lease {
  /** Frees the slots; calling it twice is harmless. A failure leaves them to expire. */
  release(): Promise<void>
}

export type Acquisition = { acquired: true; lease: Lease } | { acquired: false; full: string }

export interface SlotLeases {
  /** Takes one slot of every subject, or none when any is at its limit. */
  acquire(subjects: CountedSubject[]): Promise<Acquisition>
  /** Extends every lease this machine holds; the timer of `start()` calls it. */
  renew(): Promise<void>
  /** Renews every `leaseMs / 3` until `stop()`. */
  start(): void
  stop(): void
}

export interface SlotLeaseOptions {
  /** This machine's name in the table, unique per running process. */
  holder: string
  clock: Clock
  leaseMs?: number
}

class Full extends Error {
  constructor(readonly subject: string) {
    super(`${subject} is at its limit`)
  }
}

export function createSlotLeases(sql: Sql, options: SlotLeaseOptions): SlotLeases {
  const { holder, clock } = options
  const leaseMs = options.leaseMs ?? 30_000

  const renew = async () => {
    const expiresAt = new Date(clock.now() + leaseMs).toISOString()
    await sql`update slot_leases set expires_at = ${expiresAt} where holder = ${holder}`
  }
  const heartbeat = leaseHeartbeat(leaseMs, renew)

  return {
    async acquire(subjects) {
      const now = new Date(clock.now()).toISOString()
      const expiresAt = new Date(clock.now() + leaseMs).toISOString()
      const ordered = [...subjects].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      const ids = ordered.map(() => `lease_${randomBytes(16).toString('hex')}`)
      try {
        await sql.begin(async (tx) => {
          for (const [i, subject] of ordered.entries()) {
            await tx`select pg_advisory_xact_lock(hashtextextended(${`pigeonhole.slots.${subject.id}`}, 0))`
            await tx`delete from slot_leases where subject_id = ${subject.id} and expires_at <= ${now}`
            const [row] = await tx<{ held: number }[]>`select count(*)::int as held from slot_leases where subject_id = ${subject.id}`
            if ((row?.held ?? 0) >= subject.limit) throw new Full(subject.id)
            await tx`insert into slot_leases (id, subject_id, holder, expires_at) values (${ids[i]!}, ${subject.id}, ${holder}, ${expiresAt})`
          }
        })
      } catch (error) {
        if (error instanceof Full) return { acquired: false, full: error.subject }
        throw error
      }
      let released = false
      return {
        acquired: true,
        lease: {
          async release() {
            if (released) return
            released = true
            await sql`delete from slot_leases where id in ${sql(ids)}`
          },
        },
      }
    },
    renew,
    start: heartbeat.start,
    stop: heartbeat.stop,
  }
}
