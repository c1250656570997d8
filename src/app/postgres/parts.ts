/**
 * What PostgreSQL mode builds instead of the SQLite mode's file, lock and in-memory
 * coordination: the migrated database, this machine's pool, the storage port's PostgreSQL
 * adapter, the notifier on the wake bus, the shared request counter, long-poll leases and
 * quota reservations (with their heartbeats) and the readiness probe.
 * `close()` undoes it: the heartbeat stops, this machine's leases are released (the other
 * machines count them no longer, without waiting for them to run out), LISTEN stops, the
 * pool ends.
 */
import type { Clock } from '../../clock.ts'
import { ConfigError, type Config } from '../../config.ts'
import { MAX_STREAMS_PER_ORGANIZATION, MAX_STREAMS_PER_USER } from '../../console/live-streams.ts'
import { SharedSignInThrottle, SIGN_IN_RULES } from '../../core/users/sign-in-throttle.ts'
import { SharedInboundReservations } from '../../core/inbound/shared-reservations.ts'
import { SharedLongPollSlots } from '../../core/limits/long-poll-slots.ts'
import { SharedRequestRateLimiter } from '../../core/limits/request-rate-limiter.ts'
import type { StorageHealth } from '../../core/runtime/storage-health.ts'
import { errorFields, type Logger } from '../../log.ts'
import type { Store } from '../../storage/port.ts'
import { describePostgresUrl, openPostgres, type Sql } from '../../storage/postgres/client.ts'
import { migratePostgres } from '../../storage/postgres/migrate.ts'
import { checkSessionSemantics, SessionNotKeptError } from '../../storage/postgres/session-check.ts'
import { createLiveStreamLeases, type LiveStreamLeases } from '../../storage/postgres/live-stream-leases.ts'
import { createSignInFailures } from '../../storage/postgres/sign-in-failures.ts'
import { createQuotaReservations, type QuotaReservations } from '../../storage/postgres/quota-reservations.ts'
import { admitRequest } from '../../storage/postgres/request-counter.ts'
import { createSlotLeases, type SlotLeases } from '../../storage/postgres/slot-leases.ts'
import { createPostgresStore } from '../../storage/postgres/store.ts'
import { DatabaseClock } from './database-clock.ts'
import { DatabaseProbe } from './database-probe.ts'
import { PostgresInboxNotifier } from './notifier.ts'
import { NeverHitPageCache } from './page-cache.ts'

/** How long closing waits to give leases back and stop LISTEN before ending the pool regardless. */
const CLOSE_WAIT_MS = 5_000

export interface PostgresParts {
  sql: Sql
  store: Store
  notifier: PostgresInboxNotifier
  requestLimiter: SharedRequestRateLimiter
  longPolls: SharedLongPollSlots
  slots: SlotLeases
  /** Quota units held at RCPT TO, as rows with this machine's lease. */
  quota: QuotaReservations
  reservations: SharedInboundReservations
  /** The console's live-stream bounds, as slot leases of this machine. */
  streamSlots: LiveStreamLeases
  /** The console's password-guess counts, in the database. */
  signInThrottle: SharedSignInThrottle
  messagePages: NeverHitPageCache
  probe: DatabaseProbe
  /** This machine's clock corrected to the database's, and the measured offset. */
  clock: DatabaseClock
  close(): Promise<void>
}

/** The database could not be reached (or migrated) at start. */
export class DatabaseUnreachableError extends Error {
  constructor(target: string, cause: unknown) {
    super(
      `Cannot start on PostgreSQL at ${target}: ` +
        `${cause instanceof Error ? cause.message : String(cause)}. Start again once the database answers.`,
    )
    this.name = 'DatabaseUnreachableError'
  }
}

/** One exit line (code 78, like any configuration error) naming the database, never its password. */
function sessionNotKept(url: string, error: SessionNotKeptError): ConfigError {
  return new ConfigError(
    'DATABASE_URL',
    `${describePostgresUrl(url)} does not keep a session per connection (${error.problem}). ` +
      `LISTEN/NOTIFY and session advisory locks need a direct connection or a pooler in ` +
      `session mode, not transaction mode (docs/scaling.md, "Connections and poolers").`,
  )
}

/** `holder`: this process's name in lease rows (src/storage/postgres/lease-holder.ts). */
export async function openPostgresParts(
  config: Config,
  clock: Clock,
  logger: Logger,
  health: StorageHealth,
  holder: string,
): Promise<PostgresParts> {
  let applied: number
  try {
    // Before the migration, whose own lock is a session lock: a URL that does not keep sessions
    // (a transaction-mode pooler) is a configuration to fix, not an outage to wait out.
    await checkSessionSemantics(config.databaseUrl)
    ;({ applied } = await migratePostgres(config.databaseUrl))
  } catch (error) {
    if (error instanceof SessionNotKeptError) throw sessionNotKept(config.databaseUrl, error)
    // Nothing is open yet: the start ends here with one line naming the database (never the
    // password); a platform that restarts machines (Fly) tries again.
    throw new DatabaseUnreachableError(describePostgresUrl(config.databaseUrl), error)
  }
  logger.info('postgres_migrated', { applied })
  const sql = openPostgres(config.databaseUrl, {
    max: config.databasePoolSize,
    // 0: the operator turned the bound off (docs/scaling.md).
    statementTimeoutMs: config.databaseStatementTimeoutMs || undefined,
    onNotice: (message) => logger.debug('postgres_notice', { message }),
  })
  // What machines share (leases, request minutes, quota periods, sign-in windows) runs on this
  // clock corrected to the database's, so machines whose clocks disagree still agree on it.
  const shared = new DatabaseClock(clock, sql, logger)
  await shared.measure()
  const stopMeasuring = shared.watch()
  const slots = createSlotLeases(sql, { holder, clock: shared })
  const quota = createQuotaReservations(sql, { holder, clock: shared })
  // Same holder and table as the long-poll slots: the close below frees both.
  const streamSlots = createLiveStreamLeases(sql, {
    holder,
    clock: shared,
    bounds: { perUser: MAX_STREAMS_PER_USER, perOrganization: MAX_STREAMS_PER_ORGANIZATION },
  })
  let notifier: PostgresInboxNotifier | undefined
  let store: Store | undefined
  const giveBack = async () => {
    // The store's own leases (idempotency claims of createInbox) and their heartbeat.
    await store?.close().catch((error: unknown) => logger.warn('leases_release_failed', errorFields(error)))
    // Freed now rather than in 30 s: the other machines may hand these slots out at once.
    await sql`delete from slot_leases where holder = ${holder}`.catch((error: unknown) =>
      logger.warn('leases_release_failed', errorFields(error)),
    )
    // SMTP transactions have ended by now (the drain finished them): any row left is a unit
    // whose release failed; it would otherwise count until its lease ran out.
    await sql`delete from quota_reservations where holder = ${holder}`.catch((error: unknown) =>
      logger.warn('leases_release_failed', errorFields(error)),
    )
    await notifier?.close().catch(() => {})
  }
  const close = async () => {
    stopMeasuring()
    slots.stop()
    quota.stop()
    streamSlots.stop()
    // A database that does not answer must not hold the stop: the leases then run out by themselves.
    await Promise.race([giveBack(), Bun.sleep(CLOSE_WAIT_MS)])
    // Ending a pool whose connections the server already dropped may report that drop: nothing is left to undo.
    await sql.end({ timeout: 5 }).catch((error: unknown) => logger.debug('postgres_end_failed', errorFields(error)))
  }
  try {
    notifier = new PostgresInboxNotifier(sql, logger, holder, { publish: config.databaseWakePublish === 'on' })
    slots.start()
    quota.start()
    streamSlots.start()
    store = createPostgresStore(sql, { holder, quota })
    return {
      sql,
      store,
      notifier,
      requestLimiter: new SharedRequestRateLimiter((subjects) => admitRequest(sql, shared, subjects)),
      longPolls: new SharedLongPollSlots(slots, (error) => logger.warn('long_poll_release_failed', errorFields(error))),
      slots,
      quota,
      streamSlots,
      signInThrottle: new SharedSignInThrottle(createSignInFailures(sql, shared, SIGN_IN_RULES), (error) =>
        logger.warn('sign_in_count_failed', errorFields(error)),
      ),
      reservations: new SharedInboundReservations(quota, (error) =>
        logger.warn('quota_release_failed', errorFields(error)),
      ),
      messagePages: new NeverHitPageCache(),
      probe: new DatabaseProbe(sql, health),
      clock: shared,
      close,
    }
  } catch (error) {
    await close()
    throw error
  }
}
