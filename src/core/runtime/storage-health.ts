/**
 * Storage that cannot take a write (a volume turned read-only, an I/O error, a full disk, a
 * lock held too long) is a temporary state of the machine, not a bug: the API answers 503
 * `storage_unavailable` with Retry-After, SMTP answers 451, and the log says so once when the
 * state begins and once when it ends (with how many requests and messages it refused), never
 * a stack trace per refusal. The storage module reports every commit and every failed write
 * here (StorageObserver); readiness reads `failing`.
 */
import type { Logger } from '../../log.ts'
import type { Dialect, StorageObserver } from '../../storage/port.ts'

export type StorageFailureKind = 'read_only' | 'io_error' | 'full' | 'busy' | 'corrupt' | 'unreachable'
export const STORAGE_FAILURE_KINDS: StorageFailureKind[] = [
  'read_only',
  'io_error',
  'full',
  'busy',
  'corrupt',
  'unreachable',
]

/**
 * What was being done when storage failed or succeeded: mail being stored, a request (API or
 * console), the retention sweep, or PostgreSQL mode's readiness probe (a bounded real write
 * that takes the locks mail takes).
 */
export type StorageWork = 'mail' | 'request' | 'sweep' | 'probe'

/**
 * PostgreSQL mode: how long no work may have failed before a success ends the failing state.
 * Under a partial failure (too few connections) successes and failures interleave; without
 * it the log would flap between storage_failing and storage_recovered.
 */
export const RECOVERY_QUIET_MS = 5_000

/** Seconds a client is told to wait: long enough for a remount or a lock holder, short for a test. */
export const STORAGE_RETRY_AFTER_SECONDS = 5

/**
 * The SQLite result codes that say "the storage could not do it now" (bun:sqlite names the
 * extended code, such as SQLITE_IOERR_WRITE or SQLITE_READONLY_DBMOVED). Anything else
 * (a constraint, a bug in our SQL) is not a storage state and stays an internal error.
 */
function storageFailureKind(error: unknown): StorageFailureKind | null {
  const code = (error as { code?: unknown } | null)?.code
  if (typeof code !== 'string' || !code.startsWith('SQLITE_')) return null
  if (code.startsWith('SQLITE_READONLY')) return 'read_only'
  if (code.startsWith('SQLITE_IOERR') || code.startsWith('SQLITE_CANTOPEN')) return 'io_error'
  if (code === 'SQLITE_FULL') return 'full'
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) return 'busy'
  // A volume that fails reads makes SQLite see malformed pages (measured: after an ext4
  // shutdown, a read answers SQLITE_CORRUPT). Real damage also lands here; either way the
  // operator is told once, and a file still corrupt on a healthy volume is restored.
  if (code.startsWith('SQLITE_CORRUPT') || code === 'SQLITE_NOTADB') return 'corrupt'
  return null
}

/**
 * postgres.js's codes for a server it cannot reach or lost (refused, reset, timed out, a name
 * that does not resolve, a connection closed under a query), and the readiness probe's timeout.
 */
const UNREACHABLE_CLIENT_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  // Our patch to postgres.js: a statement heard nothing past its deadline (a silent database).
  'CONNECTION_SILENT',
  'CONNECT_TIMEOUT',
  'PROBE_TIMEOUT',
])

/**
 * PostgreSQL mode: the database could not be used now. SQLSTATE class 08 (connection
 * exceptions) and 57P01–57P03 (the server shutting down, crashed, or still starting: a
 * restart or failover) are unreachable; 53300 (too many connections), 57014 (a statement
 * cancelled by our statement_timeout) and 55P03 (a lock not granted in time) busy; 53100 (disk full)
 * full; 25006 (a read-only transaction: connected to a standby after a failover) read-only.
 * Anything else (a constraint, a bug in our SQL) is not a storage state.
 */
export function postgresFailureKind(error: unknown): StorageFailureKind | null {
  const code = (error as { code?: unknown } | null)?.code
  if (typeof code !== 'string') return null
  if (UNREACHABLE_CLIENT_CODES.has(code) || /^08[0-9A-Z]{3}$/.test(code) || /^57P0[123]$/.test(code))
    return 'unreachable'
  // 57014: a statement ran past the pool's statement_timeout (DATABASE_STATEMENT_TIMEOUT_MS):
  // a database too slow to answer now, as a lock held too long is in SQLite mode.
  // 55P03: a lock wait ran past a lock_timeout (the readiness probe's, on a table mail writes).
  if (code === '53300' || code === '57014' || code === '55P03') return 'busy'
  if (code === '53100') return 'full'
  if (code === '25006') return 'read_only'
  return null
}

/**
 * Also for failures that never reach SQLite's result codes: an fsync of the WAL that fails, a PostgreSQL server away.
 */
function ownFailureKind(error: unknown, dialect: Dialect): StorageFailureKind | null {
  // A waiting poll's query still unanswered at its deadline (core/messages/list-or-wait.ts):
  // a silent database, or a SQLite write lock held past the busy timeout.
  if ((error as { code?: unknown } | null)?.code === 'QUERY_PAST_DEADLINE')
    return dialect === 'postgres' ? 'unreachable' : 'busy'
  // Only where a PostgreSQL client runs: in SQLite mode a reset socket is a client's, not storage's.
  const kind = storageFailureKind(error) ?? (dialect === 'postgres' ? postgresFailureKind(error) : null)
  if (kind) return kind
  const errno = (error as { code?: unknown } | null)?.code
  if (errno === 'EROFS') return 'read_only'
  if (errno === 'ENOSPC' || errno === 'EDQUOT') return 'full'
  if (errno === 'EIO') return 'io_error'
  return null
}

/** How deep a chain of causes is followed; a loop in it ends there too. */
const MAX_CAUSES = 5

/**
 * The failure and the error that carries its code. Drizzle wraps what the driver threw in its
 * own error ("Failed query: ...") with the driver's error as `cause`, so every query through
 * the ORM arrives wrapped: the code is looked for along the chain of causes, not only on top.
 */
function classify(error: unknown, dialect: Dialect): { kind: StorageFailureKind; carrier: unknown } | null {
  let current: unknown = error
  for (let depth = 0; depth < MAX_CAUSES && current !== null && current !== undefined; depth++) {
    const kind = ownFailureKind(current, dialect)
    if (kind) return { kind, carrier: current }
    current = typeof current === 'object' ? (current as { cause?: unknown }).cause : undefined
  }
  return null
}

/**
 * The failing state: begun by the first failure, logged once, and ended once (logged with
 * how much it refused). In SQLite mode any commit ends it: every write goes to the one file.
 * In PostgreSQL mode work fails for different reasons (a lock on one table, a full disk,
 * too few connections), so only a success of a kind of work that failed during the state
 * ends it (the probe's success too, as the probe takes mail's locks and commits, unless the
 * database's disk was full: a small write may fit where a message does not), and only once
 * no work has failed for RECOVERY_QUIET_MS.
 */
export class StorageHealth implements StorageObserver {
  private failingSince: number | null = null
  private firstKind: StorageFailureKind | null = null
  private refused = 0
  private readonly failedWork = new Set<StorageWork>()
  private readonly failedKinds = new Set<StorageFailureKind>()
  private lastFailureAt = -Infinity
  /** One refusal may be reported twice (the write that failed, then the transport answering it). */
  private readonly seen = new WeakSet<object>()

  constructor(
    private readonly logger: Logger,
    private readonly count: (kind: StorageFailureKind) => void,
    private readonly dialect: Dialect = 'sqlite',
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** The kind of the failure that began the current failing state, or null while writes succeed. */
  get failing(): StorageFailureKind | null {
    return this.firstKind
  }

  /** The storage state `error` stands for, or null; records nothing (for a failure a caller may ignore). */
  kindOf(error: unknown): StorageFailureKind | null {
    return classify(error, this.dialect)?.kind ?? null
  }

  /** The failing state also holds a full disk, which the readiness probe's small write may not meet. */
  get full(): boolean {
    return this.failedKinds.has('full')
  }

  /**
   * Called after a success. Without `work` (SQLite's observer: any commit) it ends a failing
   * state; with it, only a success of the failing kind of work does, after the quiet time.
   */
  committed(work?: StorageWork): void {
    if (this.failingSince === null) return
    if (work !== undefined) {
      // SQLite mode: the storage's own commit (above, without `work`) is the only proof.
      if (this.dialect === 'sqlite') return
      const vouches = this.failedWork.has(work) || (work === 'probe' && !this.failedKinds.has('full'))
      if (!vouches || this.now() - this.lastFailureAt < RECOVERY_QUIET_MS) return
    }
    this.logger.warn('storage_recovered', {
      kind: this.firstKind,
      refused: this.refused,
      failing_ms: Math.round(this.now() - this.failingSince),
    })
    this.failingSince = null
    this.firstKind = null
    this.refused = 0
    this.failedWork.clear()
    this.failedKinds.clear()
  }

  /**
   * Records a failed write or read; returns its kind, or null when the error is not a storage
   * failure (the caller then treats it as before). Logs only when a failing state begins.
   */
  failed(error: unknown, work: StorageWork = 'request'): StorageFailureKind | null {
    const classified = classify(error, this.dialect)
    if (!classified) return null
    const { kind, carrier } = classified
    this.failedWork.add(work)
    this.failedKinds.add(kind)
    this.lastFailureAt = this.now()
    if (typeof error === 'object' && error !== null) {
      if (this.seen.has(error)) return kind
      this.seen.add(error)
    }
    this.count(kind)
    this.refused++
    if (this.failingSince === null) {
      this.failingSince = this.now()
      this.firstKind = kind
      // The driver's code and message, not the ORM's wrapper (which repeats the whole statement).
      const { code, message } = carrier as { code?: unknown; message?: unknown }
      this.logger.warn('storage_failing', {
        kind,
        [this.dialect === 'sqlite' ? 'sqlite_code' : 'postgres_code']: code,
        error: String(message ?? error),
      })
    }
    return kind
  }
}
