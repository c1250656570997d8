/**
 * Requests per UTC minute, counted exactly across machines: the per-key and per-organisation
 * rates (LIMIT_REQUESTS_PER_KEY, LIMIT_REQUESTS_PER_ORG) that core/limits/request-rate-limiter.ts
 * counts in memory for one process. Each admission is one transaction of conditional upserts:
 * a subject's row for the minute goes up by one only while it is below its limit, so two
 * machines can never admit the 121st request between them. As in memory, a refused request
 * is not counted, and a request is counted against all its subjects or none.
 */
import type { Clock } from '../../clock.ts'
import type { Sql } from './client.ts'
import { sqlTransaction } from './transaction.ts'

const MINUTE = 60_000

/** A counted scope, such as `key:<public id>` with its per-minute limit. */
export interface CountedSubject {
  id: string
  limit: number
}

export type Admission = { admitted: true } | { admitted: false; full: string; retryAfterSeconds: number }

/** Counts one request against every subject for the clock's current UTC minute, or refuses it. */
export async function admitRequest(sql: Sql, clock: Clock, subjects: CountedSubject[]): Promise<Admission> {
  const now = clock.now()
  const minute = Math.floor(now / MINUTE) * MINUTE
  const retryAfterSeconds = Math.max(1, Math.ceil((minute + MINUTE - now) / 1000))
  const minuteStartsAt = new Date(minute).toISOString()
  // The same order on every machine, so two admissions never wait on each other's rows in a circle.
  const ordered = [...subjects].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
  // A full subject rolls back this request's other counts and is the answer.
  return sqlTransaction<Admission, Admission>(sql, async (tx, rollBackWith) => {
    const full = (subject: string) => rollBackWith({ admitted: false, full: subject, retryAfterSeconds })
    for (const subject of ordered) {
      if (subject.limit <= 0) return full(subject.id)
      const rows = await tx`
          insert into request_counts (subject_id, minute_starts_at, admitted)
          values (${subject.id}, ${minuteStartsAt}, 1)
          on conflict (subject_id, minute_starts_at) do update set admitted = request_counts.admitted + 1
          where request_counts.admitted < ${subject.limit}
          returning admitted`
      if (rows.length === 0) return full(subject.id)
    }
    return { admitted: true }
  })
}

/** Deletes the counts of minutes before the current one; any machine may run it, at any time. */
export async function sweepRequestCounts(sql: Sql, clock: Clock): Promise<number> {
  const minuteStartsAt = new Date(Math.floor(clock.now() / MINUTE) * MINUTE).toISOString()
  const deleted = await sql`delete from request_counts where minute_starts_at < ${minuteStartsAt}`
  return deleted.count
}
