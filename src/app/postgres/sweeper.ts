/**
 * PostgreSQL mode's retention sweep: every machine's timer fires, only the machine holding
 * the job's advisory lock sweeps (runOnce), the others skip that turn. The same turn also
 * deletes ended minutes' request counts, which only this mode keeps. The logging is the
 * SQLite sweeper's (core/runtime/retention.ts): a count when something was deleted, a failing
 * database logged once by storage health rather than every minute.
 */
import type { Clock } from '../../clock.ts'
import { DomainError } from '../../core/common/errors.ts'
import { sweepOnce } from '../../core/runtime/retention.ts'
import type { Services } from '../../core/common/services.ts'
import { SIGN_IN_RULES } from '../../core/users/sign-in-throttle.ts'
import { errorFields } from '../../log.ts'
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
export function sweepOnceAcrossMachines(s: Services, sql: Sql, shared: Clock = s.clock) {
  return runOnce(sql, 'retention', async () => {
    const counts = await sweepOnce(s)
    const requestCounts = await sweepRequestCounts(sql, shared)
    // The sign-in throttle's ended windows: they count for nothing, only take room.
    const signInFailures = await createSignInFailures(sql, shared, SIGN_IN_RULES).sweep()
    return { ...counts, requestCounts, signInFailures }
  })
}

/** Runs a turn every `intervalMs`; returns the stop function. */
export function startSweeperAcrossMachines(
  s: Services,
  sql: Sql,
  shared: Clock = s.clock,
  intervalMs = 60_000,
): () => void {
  let running = false
  const timer = setInterval(() => {
    if (running) return
    running = true
    sweepOnceAcrossMachines(s, sql, shared)
      .then((turn) => {
        if (turn.ran && (turn.result.messages || turn.result.idempotencyRecords)) {
          s.logger.info('retention_sweep', {
            deleted_messages: turn.result.messages,
            deleted_idempotency_records: turn.result.idempotencyRecords,
          })
        }
      })
      .catch((error: unknown) => {
        const full = error instanceof DomainError && error.code === 'insufficient_storage'
        if (!full && !s.storageHealth.failed(error, 'sweep'))
          s.logger.error('retention_sweep_failed', errorFields(error))
      })
      .finally(() => {
        running = false
      })
  }, intervalMs)
  timer.unref?.()
  return () => clearInterval(timer)
}
