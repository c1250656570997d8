/**
 * Every metric the service exposes at /metrics. Counters are moved by the transports (most of
 * them through the log events they already write, src/metrics/log-observer.ts); gauges read
 * their figure when scraped. One instance per running app: no global registry.
 */
import { statSync } from 'node:fs'
import { Counter, Gauge, Histogram, MetricRegistry } from './exposition.ts'

/** Read at scrape time from parts the composition root owns. */
export interface MetricSources {
  smtpSessions(): number
  longPollsWaiting(): number
  databasePath: string
  /** Free bytes on the database's volume, when a disk guard watches it. */
  diskFree?(): { freeBytes: number; thresholdBytes: number; tripped: boolean }
  /** With a Litestream replica: its lag and Litestream's local files. */
  replication?: { lagSeconds(): number; localBytes(): number }
  /** PostgreSQL mode: the database's clock minus this machine's, in ms (null until measured). */
  databaseClockOffsetMs?(): number | null
}

const fileSize = (path: string) => {
  try {
    return statSync(path).size
  } catch {
    return 0 // the WAL does not exist between a checkpoint(TRUNCATE) and the next write
  }
}

const SECONDS_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]

export class AppMetrics {
  readonly registry = new MetricRegistry()
  private sources: MetricSources | undefined
  private bufferedBytes = 0

  readonly messagesStored = this.registry.add(
    new Counter(
      'pigeonhole_messages_stored_total',
      'Messages committed and acknowledged with 250 (one per recipient inbox).',
    ),
  )
  readonly messagesRefused = this.registry.add(
    new Counter<'reason'>(
      'pigeonhole_messages_refused_total',
      'SMTP refusals by reason (RCPT and DATA); reason "error" is an unexpected failure.',
    ),
  )
  readonly httpRequests = this.registry.add(
    new Counter<'operation' | 'status'>(
      'pigeonhole_http_requests_total',
      'HTTP requests by operation name and status.',
    ),
  )
  readonly httpRefusals = this.registry.add(
    new Counter<'code'>(
      'pigeonhole_http_refusals_total',
      'HTTP 429 answers by error code (rate_limit_exceeded, long_poll_limit_exceeded).',
    ),
  )
  readonly routingCalls = this.registry.add(
    new Counter<'provider' | 'operation' | 'outcome'>(
      'pigeonhole_routing_calls_total',
      'Routing provider calls by operation and outcome (ok, rejected, unavailable, error).',
    ),
  )
  readonly proxyLines = this.registry.add(
    new Counter<'outcome'>(
      'pigeonhole_smtp_proxy_lines_total',
      'PROXY lines by outcome: accepted (from TRUSTED_PROXIES), refused (from a ' +
        'peer outside them), refused_repeated (a second line behind a trusted proxy).',
    ),
  )
  readonly sweeperDeleted = this.registry.add(
    new Counter<'kind'>(
      'pigeonhole_sweeper_deleted_total',
      'Rows deleted by the retention sweeper (messages, idempotency_records).',
    ),
  )
  readonly storageFailures = this.registry.add(
    new Counter<'kind'>(
      'pigeonhole_storage_failures_total',
      'Reads and writes the storage refused, by kind (read_only, io_error, full, busy, corrupt).',
    ),
  )
  readonly storedBytesCorrupt = this.registry.add(
    new Counter<'kind'>(
      'pigeonhole_stored_bytes_corrupt_total',
      'Downloads refused because the stored bytes no longer match their SHA-256 (message_source, attachment).',
    ),
  )
  readonly longPollWake = this.registry.add(
    new Histogram(
      'pigeonhole_long_poll_wake_seconds',
      'From a message commit to the waiting poll holding its answer.',
      SECONDS_BUCKETS,
    ),
  )
  readonly eventLoopDelay = this.registry.add(
    new Histogram(
      'pigeonhole_event_loop_delay_seconds',
      'Event-loop delay, sampled every 100 ms (how late a timer fired).',
      SECONDS_BUCKETS,
    ),
  )

  /** When this process last stored a message, or started (clock milliseconds). */
  private lastStoredAt: number

  /**
   * The label values of the storage counters, known in advance: they start at 0 (the composition
   * root passes core's lists). `now` is the injected clock, for the seconds since mail last arrived.
   */
  constructor(
    known: { storageFailureKinds: readonly string[]; storedBytesKinds: readonly string[] },
    private readonly now: () => number = Date.now,
  ) {
    this.lastStoredAt = now()
    // Series known in advance start at 0, so rate() and increase() see their first event.
    this.messagesStored.inc({}, 0)
    for (const code of ['rate_limit_exceeded', 'long_poll_limit_exceeded']) this.httpRefusals.inc({ code }, 0)
    for (const kind of ['messages', 'idempotency_records']) this.sweeperDeleted.inc({ kind }, 0)
    for (const outcome of ['accepted', 'refused', 'refused_repeated']) this.proxyLines.inc({ outcome }, 0)
    for (const kind of known.storageFailureKinds) this.storageFailures.inc({ kind }, 0)
    for (const kind of known.storedBytesKinds) this.storedBytesCorrupt.inc({ kind }, 0)
    const source = () => {
      if (!this.sources) throw new Error('metric sources not attached yet')
      return this.sources
    }
    this.registry.add(
      new Gauge('pigeonhole_smtp_sessions_open', 'SMTP connections currently open.', () => source().smtpSessions()),
    )
    this.registry.add(
      new Gauge(
        'pigeonhole_smtp_data_buffered_bytes',
        'Message bytes held in memory: DATA being received or being stored.',
        () => this.bufferedBytes,
      ),
    )
    this.registry.add(
      new Gauge('pigeonhole_long_polls_waiting', 'Long polls currently waiting (slots held).', () =>
        source().longPollsWaiting(),
      ),
    )
    this.registry.add(
      new Gauge('pigeonhole_database_bytes', 'Size of the SQLite database file and of its WAL.', () => {
        const path = source().databasePath
        return [
          [{ file: 'database' }, fileSize(path)],
          [{ file: 'wal' }, fileSize(`${path}-wal`)],
        ]
      }),
    )
    this.registry.add(
      new Gauge(
        'pigeonhole_disk_free_bytes',
        'Free bytes on the database volume (as seen by the free-space guard).',
        () => source().diskFree?.().freeBytes ?? [],
      ),
    )
    this.registry.add(
      new Gauge(
        'pigeonhole_disk_free_threshold_bytes',
        'Below this many free bytes new mail and new inboxes are refused (DISK_MIN_FREE).',
        () => source().diskFree?.().thresholdBytes ?? [],
      ),
    )
    this.registry.add(
      new Gauge('pigeonhole_disk_guard_tripped', '1 while new mail is refused for lack of space.', () => {
        const disk = source().diskFree?.()
        return disk ? (disk.tripped ? 1 : 0) : []
      }),
    )
    this.registry.add(
      new Gauge(
        'pigeonhole_replication_lag_seconds',
        'Seconds the oldest write not yet in the Litestream replica has waited (0: the replica holds everything).',
        () => {
          const replication = source().replication
          return replication ? Math.round(replication.lagSeconds() * 1000) / 1000 : []
        },
      ),
    )
    this.registry.add(
      new Gauge(
        'pigeonhole_litestream_local_bytes',
        "Bytes of Litestream's files beside the database (its shadow WAL; grows while the replica is unreachable).",
        () => source().replication?.localBytes() ?? [],
      ),
    )
    this.registry.add(
      new Gauge(
        'pigeonhole_seconds_since_last_message_stored',
        'Seconds since this process last stored a message (since it started, ' +
          "before its first). Across machines, the smallest is the service's.",
        () => Math.max(0, Math.round(this.now() - this.lastStoredAt) / 1000),
      ),
    )
    this.registry.add(
      new Gauge(
        'pigeonhole_database_clock_offset_seconds',
        "PostgreSQL mode: the database's clock minus this machine's (leases and request minutes are corrected by it).",
        () => {
          const offset = source().databaseClockOffsetMs?.()
          return offset === undefined || offset === null ? [] : offset / 1000
        },
      ),
    )
    this.registry.add(
      new Gauge('process_resident_memory_bytes', 'Resident set size of the server process.', () =>
        process.memoryUsage.rss(),
      ),
    )
  }

  attach(sources: MetricSources): void {
    this.sources = sources
  }

  /** A message was committed and acknowledged (the `smtp_message_stored` event). */
  messageStored(count: number): void {
    this.messagesStored.inc({}, count)
    this.lastStoredAt = this.now()
  }

  /** DATA bytes taken into (positive) or let go from (negative) memory. */
  adjustBufferedBytes(delta: number): void {
    this.bufferedBytes += delta
  }

  render(): string {
    return this.registry.render()
  }
}
