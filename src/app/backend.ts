/**
 * The one place that decides the storage mode: `openBackend(config, …)` opens the database
 * DATABASE_URL or DATABASE_PATH names and returns it with everything the mode brings, for
 * both composition roots (the server's assemble.ts and the CLI's src/cli.ts).
 *
 * - SQLite (the default): the file with its server lock (the server's use only: the CLI may
 *   write beside a running server), and coordination in this process's memory.
 * - PostgreSQL (DATABASE_URL): the migrated database, a pool, and coordination every machine
 *   sees (./postgres/parts.ts: wake bus, request counts, leases, the run-once lock, the probe,
 *   the clock corrected to the database's).
 *
 * The CLI (`use: 'admin'`) gets the store alone: it answers no request, waits for no mail and
 * holds no lease but the idempotency claims its store takes (none: it creates no inbox).
 */
import type { Clock } from '../clock.ts'
import type { Config } from '../config.ts'
import type { SharedConsoleCounts } from '../console/index.ts'
import { InboundReservations, type QuotaHolds } from '../core/inbound/reservations.ts'
import type { RefusalsShared } from '../core/inbound/refused-deliveries.ts'
import { type LongPollAdmission, LongPollSlots } from '../core/limits/long-poll-slots.ts'
import { MessagePageCache } from '../core/messages/page-cache.ts'
import { startRetentionSweeper } from '../core/runtime/retention.ts'
import { type RequestAdmission, RequestRateLimiter } from '../core/limits/request-rate-limiter.ts'
import type { Services } from '../core/common/services.ts'
import type { StorageHealth } from '../core/runtime/storage-health.ts'
import type { ReadinessProbes } from '../http/routes/ready.ts'
import type { Logger } from '../log.ts'
import { InboxNotifier } from '../notifier.ts'
import { openStorage, type Storage } from '../storage/database.ts'
import type { Dialect, Store } from '../storage/port.ts'
import { openPostgres } from '../storage/postgres/client.ts'
import { migratePostgres } from '../storage/postgres/migrate.ts'
import { newLeaseHolder } from '../storage/postgres/lease-holder.ts'
import { createPostgresStore } from '../storage/postgres/store.ts'
import { lockServerDatabase, type ServerLock } from '../storage/server-lock.ts'
import { createSqliteStore } from '../storage/sqlite/store.ts'
import { openPostgresParts } from './postgres/parts.ts'
import { startSweeperAcrossMachines } from './postgres/sweeper.ts'

/** The server, or the admin CLI (the store alone). */
export type BackendUse = 'server' | 'admin'

/** What a server runs on that differs by mode; each SQLite part is its one-process form. */
interface Coordination {
  /** "Inbox changed": in memory, or over PostgreSQL's wake bus to every machine. */
  notifier: InboxNotifier
  requestLimiter: RequestAdmission
  longPolls: LongPollAdmission
  messagePages: MessagePageCache
  reservations: QuotaHolds
  /** Refusals other machines saw, for the console's inbox pages; null on one machine. */
  refusals: RefusalsShared | null
  /** The console's live-stream bounds, sign-in throttle and ended accesses across machines; null on one machine. */
  console: SharedConsoleCounts | null
  /** /ready's checks of the database and of this machine's clock (PostgreSQL mode). */
  readiness: Pick<ReadinessProbes, 'database' | 'clock'>
  /** This machine's clock's offset from the database's (PostgreSQL mode), for /metrics. */
  clockOffsetMs?: () => number | null
  /**
   * Several machines: a stop lets waiting long polls run to their own answers, as the
   * others serve meanwhile (docs/scaling.md, "Stopping a machine"). One machine cuts them.
   */
  patientDrain: boolean
  /** Starts the retention sweep (on every machine's timer, run once across them); returns its stop. */
  startSweeper(services: Services): () => void
  /**
   * Starts PostgreSQL mode's database probe (repeated while the
   * database is unavailable); returns its stop. One file has none.
   */
  watchDatabase?: () => () => void
}

export interface Backend<Use extends BackendUse = BackendUse> {
  readonly dialect: Dialect
  /** The storage port (src/storage/port.ts), the only way core reaches the database. */
  readonly store: Store
  /**
   * SQLite mode's file: the disk guard measures it (through `sqlite.file`), the replication
   * monitor reads its page size, tests reach under the port with it. null in PostgreSQL mode.
   */
  readonly sqlite: Storage | null
  /**
   * The server's lock on the SQLite file; null in PostgreSQL mode
   * (machines share the database on purpose) and for the CLI.
   */
  readonly lock: ServerLock | null
  /** This process's name in every lease row it writes (PostgreSQL mode); null in SQLite mode, which leases nothing. */
  readonly leaseHolder: string | null
  /** The server's parts of the mode; null for the CLI. */
  readonly coordination: Use extends 'server' ? Coordination : null
  /** Gives back this process's leases and closes the database (the lock last). */
  close(): Promise<void>
}

export type OpenBackendOptions<Use extends BackendUse> = Use extends 'server'
  ? { use: Use; clock: Clock; logger: Logger; health: StorageHealth }
  : { use: Use }

/** The mode the config names: PostgreSQL with DATABASE_URL, the SQLite file otherwise. */
export const dialectOf = (config: Pick<Config, 'databaseUrl'>): Dialect =>
  config.databaseUrl === '' ? 'sqlite' : 'postgres'

export function openBackend<Use extends BackendUse>(
  config: Config,
  options: OpenBackendOptions<Use>,
): Promise<Backend<Use>> {
  const opened =
    dialectOf(config) === 'sqlite'
      ? openSqlite(config, options as OpenBackendOptions<BackendUse>)
      : openPostgresBackend(config, options as OpenBackendOptions<BackendUse>)
  return opened as Promise<Backend<Use>>
}

function openSqlite(config: Config, options: OpenBackendOptions<BackendUse>): Promise<Backend> {
  if (options.use === 'admin') {
    // No lock: the CLI writes beside a running server (WAL), and checkpoints in its own turns.
    const sqlite = openStorage(config.databasePath)
    return Promise.resolve({
      dialect: 'sqlite',
      store: createSqliteStore(sqlite),
      sqlite,
      lock: null,
      leaseHolder: null,
      coordination: null,
      // The connection only, as the CLI always closed it: the WAL and its checkpoints are the
      // running server's (and Litestream's) to manage, not a short command's.
      close: async () => sqlite.sqlite.close(),
    })
  }
  const { clock, health } = options as OpenBackendOptions<'server'>
  // Before the file opens: a second server on the same file stops here, naming the first.
  const lock = lockServerDatabase(config.databasePath)
  let sqlite: Storage
  try {
    sqlite = openStorage(config.databasePath, { checkpointInWorker: true })
  } catch (error) {
    lock.release()
    throw error
  }
  sqlite.observer = health
  const coordination: Coordination = {
    notifier: new InboxNotifier(),
    requestLimiter: new RequestRateLimiter(clock),
    longPolls: new LongPollSlots(),
    messagePages: new MessagePageCache(),
    reservations: new InboundReservations(),
    refusals: null,
    console: null,
    readiness: {},
    patientDrain: false,
    startSweeper: (services) => startRetentionSweeper(services),
  }
  return Promise.resolve({
    dialect: 'sqlite',
    store: createSqliteStore(sqlite),
    sqlite,
    lock,
    leaseHolder: null,
    coordination,
    close: async () => {
      sqlite.close()
      lock.release()
    },
  })
}

async function openPostgresBackend(config: Config, options: OpenBackendOptions<BackendUse>): Promise<Backend> {
  const leaseHolder = newLeaseHolder()
  if (options.use === 'admin') {
    // Migrated as the server migrates at start (under its lock): a CLI run first on a new
    // database leaves it as a server expects it.
    await migratePostgres(config.databaseUrl)
    const sql = openPostgres(config.databaseUrl, { max: 2 })
    const store = createPostgresStore(sql, { holder: leaseHolder })
    return {
      dialect: 'postgres',
      store,
      sqlite: null,
      lock: null,
      leaseHolder,
      coordination: null,
      close: async () => {
        await store.close()
        await sql.end()
      },
    }
  }
  const { clock, logger, health } = options as OpenBackendOptions<'server'>
  const parts = await openPostgresParts(config, clock, logger, health, leaseHolder)
  const coordination: Coordination = {
    notifier: parts.notifier,
    requestLimiter: parts.requestLimiter,
    longPolls: parts.longPolls,
    messagePages: parts.messagePages,
    reservations: parts.reservations,
    refusals: parts.notifier.refusals,
    console: {
      streamSlots: parts.streamSlots,
      signInThrottle: parts.signInThrottle,
      accessEnded: parts.notifier.accessEnded,
    },
    readiness: { database: () => parts.probe.check(), clock: () => parts.clock.readiness() },
    clockOffsetMs: () => parts.clock.offsetMs,
    patientDrain: true,
    // Every machine's timer fires; the run-once lock lets one of them sweep.
    startSweeper: (services) => startSweeperAcrossMachines(services, parts.sql, parts.clock),
    watchDatabase: () => parts.probe.watch(),
  }
  return {
    dialect: 'postgres',
    store: parts.store,
    sqlite: null,
    lock: null,
    leaseHolder,
    coordination,
    close: () => parts.close(),
  }
}
