/**
 * Storage that cannot take a write (a volume turned read-only, an I/O error, a full disk, a
 * lock held too long) is a temporary state of the machine, not a bug: the API answers 503
 * `storage_unavailable` with Retry-After, SMTP answers 451, and the log says so once when the
 * state begins and once when it ends (with how many requests and messages it refused), never
 * a stack trace per refusal. The storage module reports every commit and every failed write
 * here (StorageObserver); readiness reads `failing`.
 */
import type { Logger } from '../log.ts'
import type { StorageObserver } from '../storage/database.ts'

export type StorageFailureKind = 'read_only' | 'io_error' | 'full' | 'busy' | 'corrupt'
export const STORAGE_FAILURE_KINDS: StorageFailureKind[] = ['read_only', 'io_error', 'full', 'busy', 'corrupt']

/** Seconds a client is told to wait: long enough for a remount or a lock holder, short for a test. */
export const STORAGE_RETRY_AFTER_SECONDS = 5

/**
 * The SQLite result codes that say "the storage could not do it now" (bun:sqlite names the
 * extended code, such as SQLITE_IOERR_WRITE or SQLITE_READONLY_DBMOVED). Anything else
 * (a constraint, a bug in our SQL) is not a storage state and stays an internal error.
 */
export function storageFailureKind(error: unknown): StorageFailureKind | null {
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

/** Also for failures that never reach SQLite's result codes: an fsync of the WAL that fails. */
function failureKindOf(error: unknown): StorageFailureKind | null {
  const kind = storageFailureKind(error)
  if (kind) return kind
  const errno = (error as { code?: unknown } | null)?.code
  if (errno === 'EROFS') return 'read_only'
  if (errno === 'ENOSPC' || errno === 'EDQUOT') return 'full'
  if (errno === 'EIO') return 'io_error'
  return null
}

export class StorageHealth implements StorageObserver {
  private failingSince: number | null = null
  private firstKind: StorageFailureKind | null = null
  private refused = 0
  /** One refusal may be reported twice (the write that failed, then the transport answering it). */
  private readonly seen = new WeakSet<object>()

  constructor(
    private readonly logger: Logger,
    private readonly count: (kind: StorageFailureKind) => void,
  ) {}

  /** The kind of the failure that began the current failing state, or null while writes succeed. */
  get failing(): StorageFailureKind | null {
    return this.firstKind
  }

  /** Called after every successful commit: ends a failing state. */
  committed(): void {
    if (this.failingSince === null) return
    this.logger.warn('storage_recovered', {
      kind: this.firstKind,
      refused: this.refused,
      failing_ms: Math.round(performance.now() - this.failingSince),
    })
    this.failingSince = null
    this.firstKind = null
    this.refused = 0
  }

  /**
   * Records a failed write or read; returns its kind, or null when the error is not a storage
   * failure (the caller then treats it as before). Logs only when a failing state begins.
   */
  failed(error: unknown): StorageFailureKind | null {
    const kind = failureKindOf(error)
    if (!kind) return null
    if (typeof error === 'object' && error !== null) {
      if (this.seen.has(error)) return kind
      this.seen.add(error)
    }
    this.count(kind)
    this.refused++
    if (this.failingSince === null) {
      this.failingSince = performance.now()
      this.firstKind = kind
      const { code, message } = error as { code?: unknown; message?: unknown }
      this.logger.warn('storage_failing', { kind, sqlite_code: code, error: String(message ?? error) })
    }
    return kind
  }
}
