import type { KeyRevocations } from '../api-keys/revocations.ts'
import type { DownloadSlots } from '../attachments/download-slots.ts'
import type { Clock } from '../../clock.ts'
import type { Config } from '../../config.ts'
import type { Logger } from '../../log.ts'
import type { InboxNotifier } from '../../notifier.ts'
import type { PublicUrls } from '../../public-urls.ts'
import type { RoutingProvider } from './routing.ts'
import type { Store } from '../../storage/port.ts'
import type { CursorCodec } from './cursor.ts'
import type { ParsePool } from '../inbound/parse-pool.ts'
import type { DiskGuard } from '../runtime/disk-guard.ts'
import type { StorageHealth } from '../runtime/storage-health.ts'
import type { ReplicationMonitor } from '../runtime/replication.ts'
import type { QuotaHolds } from '../inbound/reservations.ts'
import type { RefusedDeliveries } from '../inbound/refused-deliveries.ts'
import type { LongPollAdmission } from '../limits/long-poll-slots.ts'
import type { MessagePageCache } from '../messages/page-cache.ts'
import type { RequestAdmission } from '../limits/request-rate-limiter.ts'

/**
 * The figures core itself reports for /metrics. src/metrics/app-metrics.ts implements it and
 * the composition root hands it in, so core and metrics import nothing from each other.
 */
interface CoreMetrics {
  /** Seconds from a message's commit to the waiting long poll holding its answer. */
  readonly longPollWake: { observe(seconds: number): void }
}

/** One message's DATA on disk, from its first spooled chunk to its parse. */
export interface SpooledData {
  append(chunks: Buffer[]): Promise<void>
  read(): Promise<Buffer>
  /** Deletes the file; safe to call more than once. */
  remove(): Promise<void>
}

/**
 * Where DATA too big for memory waits for its parse, as the SMTP transport sees it (the files
 * beside the database, src/storage/spool.ts), so the transport needs nothing from storage.
 */
export interface DataSpool {
  /** Resolves with a release function when this reader may read from its socket again. */
  readTurn(): Promise<() => void>
  create(): Promise<SpooledData>
  /** Bytes in spool files now. */
  readonly bytes: number
}

/** Everything a domain verb may use, built once by the composition root (src/app.ts). */
export interface Services {
  config: Config
  /** Resolved once the HTTP listener has its port (see resolvePublicUrls). */
  publicUrls: () => PublicUrls
  /** The storage port (src/storage/port.ts): SQLite or PostgreSQL. Core's verbs query through it. */
  store: Store
  clock: Clock
  logger: Logger
  routing: RoutingProvider
  notifier: InboxNotifier
  cursors: CursorCodec
  /** Requests per minute: in memory (SQLite mode) or counted in the database (PostgreSQL mode). */
  requestLimiter: RequestAdmission
  /** Concurrent long polls: in memory (SQLite mode) or as leases every machine sees (PostgreSQL mode). */
  longPolls: LongPollAdmission
  /** Concurrent attachment downloads per organisation on this machine. */
  downloads: DownloadSlots
  /** Ends the waiting long polls of a key revoked meanwhile, wherever it was revoked. */
  keyRevocations: KeyRevocations
  /** Serialized answers of repeated non-waiting listings, valid while their inbox is unchanged. */
  messagePages: MessagePageCache
  reservations: QuotaHolds
  /** Recent refusals at RCPT TO per address, for the console's inbox page (memory only). */
  refusedDeliveries: RefusedDeliveries
  /** Parses inbound mail off the event loop. */
  parser: ParsePool
  /** Where DATA too big for memory waits for its parse (src/storage/spool.ts). */
  spool: DataSpool
  /** What core reports for /metrics; plain numbers, no I/O. */
  metrics: CoreMetrics
  /** Free-space guard: new mail and inboxes wait while the volume is nearly full. */
  disk: DiskGuard
  /** Whether writes currently succeed; logs the start and end of a failing volume once each. */
  storageHealth: StorageHealth
  /** What the Litestream replica holds and what Litestream keeps locally; null without a replica. */
  replication: ReplicationMonitor | null
  /** Aborted when the server begins shutting down: console live streams end. */
  stopping: AbortSignal
  /**
   * Aborted once a stop has closed every HTTP connection. A long poll is not ended by the
   * stop's start (mail still arriving may wake it); when this fires its client is gone.
   */
  stopped: AbortSignal
}

/**
 * The slice of Services the account verbs (organisations, keys, users, sessions, members,
 * audit, setup) use: what the admin CLI can build without starting a server.
 */
export type AccountServices = Pick<Services, 'clock' | 'config' | 'store'>
