/**
 * PostgreSQL mode's retention sweep: every machine's timer fires, only the machine holding
 * the job's advisory lock sweeps (runOnce), the others skip that turn. The same turn also
 * deletes ended minutes' request counts, which only this mode keeps. The schedule and the
 * logging are core's (core/runtime/retention.ts `scheduleSweeps`), as in SQLite mode.
 */
import type { Clock } from '../../clock.ts'
import { scheduleSweeps, sweepOnce } from '../../core/runtime/retention.ts'
import type { Services } from '../../core/common/services.ts'
import { SIGN_IN_RULES } from '../../core/users/sign-in-throttle.ts'
import type { Sql } from '../../storage/postgres/client.ts'
import { sweepRequestCounts } from '../../storage/postgres/request-counter.ts'
import { createSignInFailures } from '../../storage/postgres/sign-in-failures.ts'
import { runOnce } from '../../storage/postgres/run-once.ts'

/**
 * One turn on whichever machine gets the lock; `{ ran: false }` elsewhere. `shared` is the
 * clock the request minutes and sign-in windows are counted on (corrected to the database's:
 * database-clock.ts), so a machine whose own clock runs ahead does not delete the minute the
 * others still count in.
 */
function sweepOnceAcrossMachines(s: Services, sql: Sql, shared: Clock = s.clock) {
  return runOnce(sql, RETENTION_JOB, () => retentionTurn(s, sql, shared))
}

/** The run-once lock's name for the sweep: one machine at a time holds it. */
export const RETENTION_JOB = 'retention'

/** What a turn does, once the lock is held (the lock's holder alone runs it). */
export async function retentionTurn(s: Services, sql: Sql, shared: Clock) {
  const counts = await sweepOnce(s)
  const requestCounts = await sweepRequestCounts(sql, shared)
  // The sign-in throttle's ended windows: they count for nothing, only take room.
  const signInFailures = await createSignInFailures(sql, shared, SIGN_IN_RULES).sweep()
  return { ...counts, requestCounts, signInFailures }
}

/** Runs a turn every `intervalMs` (core's schedule and logging); returns the stop function. */
export function startSweeperAcrossMachines(
  s: Services,
  sql: Sql,
  shared: Clock = s.clock,
  intervalMs = 60_000,
): () => void {
  return scheduleSweeps(
    s,
    async () => {
      const turn = await sweepOnceAcrossMachines(s, sql, shared)
      return turn.ran ? turn.result : null
    },
    intervalMs,
  )
}
