/**
 * Jobs that must run on one machine at a time (the retention sweep): each machine's timer
 * still fires, but only the one that gets the job's advisory lock runs it; the others skip
 * that turn rather than queue behind it, since the next turn comes soon anyway. A machine
 * that dies mid-job loses its connection, and with it the lock.
 */
import { tryAdvisoryLock } from './advisory-lock.ts'
import type { Sql } from './client.ts'

/** Runs `job` unless another machine is running the job called `name` right now. */
export function runOnce<T>(
  sql: Sql,
  name: string,
  job: () => Promise<T>,
): Promise<{ ran: true; result: T } | { ran: false }> {
  return tryAdvisoryLock(sql, `pigeonhole.job.${name}`, job)
}
