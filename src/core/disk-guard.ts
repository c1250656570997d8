/**
 * The free-space guard (Postfix's queue_minfree, for us): below DISK_MIN_FREE new mail is
 * refused at RCPT (452 4.3.1) and createInbox answers 503, while reads, deletes and the
 * retention sweeper go on, so space can be won back through the product. It leaves guard
 * mode by itself once there is room again.
 *
 * "Free" is the smaller of the volume's free space and what SQLite may still add to the file
 * (PRAGMA max_page_count, counting its free-list pages), less the bytes waiting in the DATA
 * spool for their commit. A ballast file of half the threshold
 * (at most 4 MiB) is kept beside the database. When something else fills the volume past
 * the guard (logs, Litestream's shadow WAL) the ballast is deleted, at the guard's next check
 * or when a delete meets SQLITE_FULL, so deletes still find room for their WAL pages (deleting rows rewrites a few b-tree and free-list pages, not the freed blobs, so
 * a few MiB go a long way). It is made again when the guard clears.
 */
import { closeSync, existsSync, fsyncSync, openSync, rmSync, statSync, statfsSync, writeSync } from 'node:fs'
import { dirname, join } from 'node:path'
import type { Logger } from '../log.ts'
import { DomainError } from './errors.ts'
import type { Storage } from '../storage/database.ts'

const MiB = 1024 * 1024
const UNITS: Record<string, number> = { B: 1, KiB: 1024, MiB, GiB: 1024 * MiB }
/** Fresh enough for RCPT and createInbox; a stat and three PRAGMAs at most once a second. */
const CACHE_MS = 1_000

const isFull = (error: unknown) => (error as { code?: unknown }).code === 'SQLITE_FULL'

export type MinFree = { bytes: number } | { percent: number }

/** DISK_MIN_FREE: `0`, bytes with an optional unit (`64MiB`), or a percentage (`5%`). */
export function parseMinFree(text: string): MinFree | null {
  const percent = /^([0-9]{1,2}(?:\.[0-9]+)?)%$/.exec(text)
  if (percent) return { percent: Number(percent[1]) }
  const bytes = /^([0-9]+)(B|KiB|MiB|GiB)?$/.exec(text)
  return bytes ? { bytes: Number(bytes[1]) * UNITS[bytes[2] ?? 'B']! } : null
}

export interface DiskStatus {
  freeBytes: number
  thresholdBytes: number
  tripped: boolean
}

export class DiskGuard {
  private status_: DiskStatus = { freeBytes: Infinity, thresholdBytes: 0, tripped: false }
  private checkedAt = -Infinity
  readonly ballastPath: string

  constructor(
    private readonly storage: Storage,
    private readonly databasePath: string,
    private readonly minFree: MinFree,
    private readonly logger: Logger,
    /**
     * Bytes already received but not yet in the database (the DATA spool). They are on the
     * volume now and will be written again by the commit before their spool file goes, so
     * they count against both the volume's room and SQLite's.
     */
    private readonly inTransit: () => number = () => 0,
  ) {
    this.ballastPath = join(dirname(databasePath), 'free-space-ballast')
  }

  get enabled(): boolean {
    return 'percent' in this.minFree ? this.minFree.percent > 0 : this.minFree.bytes > 0
  }

  /** True while there is room for new mail and new inboxes (cached for a second). */
  hasRoom(): boolean {
    if (!this.enabled) return true
    if (performance.now() - this.checkedAt >= CACHE_MS) this.refresh()
    return !this.status_.tripped
  }

  status(): DiskStatus {
    if (this.enabled && performance.now() - this.checkedAt >= CACHE_MS) this.refresh()
    return { ...this.status_ }
  }

  /** Measures now; trips or clears the guard (one warning line each way). */
  refresh(): DiskStatus {
    this.checkedAt = performance.now()
    const { freeBytes, volumeFreeBytes, thresholdBytes } = this.measure()
    const ballast = this.ballastBytes(thresholdBytes)
    let tripped = this.status_.tripped
    if (!tripped && freeBytes < thresholdBytes) {
      tripped = true
      this.logger.warn('disk_guard_tripped', { free_bytes: freeBytes, threshold_bytes: thresholdBytes })
    }
    if (tripped && volumeFreeBytes < ballast) this.releaseBallast('volume_nearly_full')
    else if (tripped && freeBytes >= thresholdBytes + ballast) {
      // The margin of one ballast keeps the guard from flapping once the ballast is back.
      tripped = false
      this.logger.warn('disk_guard_cleared', { free_bytes: freeBytes, threshold_bytes: thresholdBytes })
      this.ensureBallast(thresholdBytes)
    }
    this.status_ = { freeBytes, thresholdBytes, tripped }
    return { ...this.status_ }
  }

  /** Re-measures every `intervalMs`, so the ballast is released even while no mail arrives. */
  watch(intervalMs = 2_000): () => void {
    if (!this.enabled) return () => {}
    const timer = setInterval(() => {
      try {
        this.refresh()
      } catch (error) {
        this.logger.warn('disk_guard_check_failed', { error: error instanceof Error ? error.message : String(error) })
      }
    }, intervalMs)
    timer.unref?.()
    return () => clearInterval(timer)
  }

  /** Lays the ballast down at start-up when there is room for it and the guard is clear. */
  start(): void {
    if (!this.enabled) return
    const status = this.refresh()
    if (!status.tripped) this.ensureBallast(status.thresholdBytes)
  }

  /**
   * Runs a write that frees space (deletes, the sweeper). If the volume is so full that even
   * it fails with SQLITE_FULL, the ballast goes and the write is tried once more.
   */
  freeing<T>(work: () => T): T {
    try {
      return work()
    } catch (error) {
      if (!isFull(error)) throw error
      if (this.releaseBallast('delete_needed_room') > 0) {
        try {
          return work()
        } catch (again) {
          if (!isFull(again)) throw again
        }
      }
      throw new DomainError('insufficient_storage', 'The server is out of disk space; retry later.', { retryAfterSeconds: 60 })
    }
  }

  private measure(): { freeBytes: number; volumeFreeBytes: number; thresholdBytes: number } {
    const volume = statfsSync(dirname(this.databasePath))
    const volumeFree = volume.bavail * volume.bsize
    const pragma = (name: string) => Object.values(this.storage.sqlite.query(`PRAGMA ${name}`).get() as Record<string, number>)[0]!
    const pageSize = pragma('page_size')
    const sqliteRoom = (pragma('max_page_count') - pragma('page_count') + pragma('freelist_count')) * pageSize
    const thresholdBytes = 'percent' in this.minFree ? Math.ceil((volume.blocks * volume.bsize * this.minFree.percent) / 100) : this.minFree.bytes
    const promised = this.inTransit()
    return { freeBytes: Math.min(volumeFree, sqliteRoom) - promised, volumeFreeBytes: volumeFree, thresholdBytes }
  }

  private ballastBytes(thresholdBytes: number): number {
    return Math.min(Math.floor(thresholdBytes / 2), 4 * MiB)
  }

  private releaseBallast(why: string): number {
    if (!existsSync(this.ballastPath)) return 0
    const size = statSync(this.ballastPath).size
    rmSync(this.ballastPath, { force: true })
    this.logger.warn('disk_ballast_released', { bytes: size, reason: why })
    return size
  }

  /** Real zeros, written and synced: a sparse file would reserve nothing. */
  private ensureBallast(thresholdBytes: number): void {
    const size = this.ballastBytes(thresholdBytes)
    if (size === 0 || (existsSync(this.ballastPath) && statSync(this.ballastPath).size >= size)) return
    const chunk = Buffer.alloc(Math.min(size, MiB))
    let fd: number | undefined
    try {
      fd = openSync(this.ballastPath, 'w', 0o600)
      for (let written = 0; written < size; ) written += writeSync(fd, chunk, 0, Math.min(chunk.length, size - written))
      fsyncSync(fd)
    } catch (error) {
      // No room for it: the guard still works, deletes just lose their reserve.
      rmSync(this.ballastPath, { force: true })
      this.logger.warn('disk_ballast_not_created', { bytes: size, error: error instanceof Error ? error.message : String(error) })
    } finally {
      if (fd !== undefined) closeSync(fd)
    }
  }
}
