/**
 * The console's open live streams across machines. console/live-streams.ts bounds them in
 * memory for one process (MAX_STREAMS_PER_USER per person, MAX_STREAMS_PER_ORGANIZATION per
 * organisation), since each holds a connection and a listener while a tab stays open. With
 * several machines behind one address a person's tabs land on different machines, so the
 * count lives in PostgreSQL as slot leases (slot-leases.ts): a stream takes one slot of its
 * user and one of its organisation, or none, and releases them when it ends. A machine that
 * dies stops counting once its leases run out, so a crashed machine's tabs do not hold a
 * person's ten slots longer than a lease.
 *
 * Subjects are prefixed `stream-user:` and `stream-org:` so they never share a count with the
 * long-poll slots (`key:`, `org:`) in the same table. The bounds are passed in (the console's
 * MAX_STREAMS_PER_USER and MAX_STREAMS_PER_ORGANIZATION) and the refusal texts stay in
 * console/live-streams.ts; `full` says which bound was reached.
 */
import type { Clock } from '../../clock.ts'
import type { Sql } from './client.ts'
import { createSlotLeases, type Lease } from './slot-leases.ts'

type StreamAdmission = { opened: true; lease: Lease } | { opened: false; full: 'user' | 'organization' }

export interface LiveStreamLeases {
  /** Counts one more open stream of the user and the organisation, or refuses at either bound. */
  open(owner: { userId: string; organizationId: string }): Promise<StreamAdmission>
  renew(): Promise<void>
  start(): void
  stop(): void
}

export interface StreamBounds {
  perUser: number
  perOrganization: number
}

const streamSubjects = (owner: { userId: string; organizationId: string }, bounds: StreamBounds) => ({
  user: { id: `stream-user:${owner.userId}`, limit: bounds.perUser },
  organization: { id: `stream-org:${owner.organizationId}`, limit: bounds.perOrganization },
})

export function createLiveStreamLeases(
  sql: Sql,
  options: { holder: string; clock: Clock; bounds: StreamBounds; leaseMs?: number },
): LiveStreamLeases {
  const slots = createSlotLeases(sql, options)
  return {
    async open(owner) {
      const subjects = streamSubjects(owner, options.bounds)
      const taken = await slots.acquire([subjects.user, subjects.organization])
      if (taken.acquired) return { opened: true, lease: taken.lease }
      return { opened: false, full: taken.full === subjects.user.id ? 'user' : 'organization' }
    },
    renew: slots.renew,
    start: slots.start,
    stop: slots.stop,
  }
}
