/**
 * The free-space guard (Postfix's queue_minfree, for us): below DISK_MIN_FREE new mail is
 * refused at RCPT (452 4.3.1) and createInbox answers 503, while reads, deletes and the
 * retention sweeper go on, so space can be won back through the product. It leaves guard
 * mode by itself once there is room again.
 *
 * "Free" is the volume's free space plus the free pages inside the database (what deletes
 * gave back, reused before the file grows), capped by what SQLite may still add to the file
 * (PRAGMA max_page_count), less the bytes waiting in the DATA spool for their commit; the
 * volume's own free space must also stay above half the threshold: while it is short of the
 * threshold plus a ballast, the file gives its free pages back to the volume (incremental
 * vacuum, a step per event-loop turn), so a delete on a full volume lifts the guard. A ballast file of half
 * the threshold (at most 4 MiB) is kept beside the database. When something else fills the volume past
 * the guard (logs, Litestream's shadow WAL) and a delete meets SQLITE_FULL, the ballast is
 * deleted so the delete finds room for its WAL pages (deleting rows rewrites a few b-tree and
 * free-list pages, not the freed blobs, so a few MiB go a long way). It is made again when
 * the guard clears.
 */
import { closeSync, existsSync, fsyncSync, openSync, rmSync, statSync, statfsSync, writeSync } from 'node:fs'
import { dirname, join } from 'node:path'
import type { Logger } from '../../log.ts'
import { DomainError } from '../common/errors.ts'
import type { DatabaseFile } from '../../storage/port.ts'

const MiB = 1024 * 1024
const UNITS: Record<string, number> = { B: 1, KiB: 1024, MiB, GiB: 1024 * MiB }
/** Fresh enough for RCPT and createInbox; a stat and three PRAGMAs at most once a second. */
const CACHE_MS = 1_000
/**
 * Free pages given back to the volume per event-loop turn: moving live pages and cutting the
 * file took 5 to 12 ms per 2 MiB here, and the turns between let mail and requests through.
 */
const RELEASE_STEP_BYTES = 2 * MiB

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
  /** Free on the volume plus SQLite's free pages, capped by max_page_count. */
  freeBytes: number
  thresholdBytes: number
  tripped: boolean
  /** Of freeBytes, what lies in free pages inside the database file. */
  freePageBytes: number
  /**
   * Litestream's shadow WAL and other local files. Already counted as used by the volume's
   * figure; shown apart because an unreachable replica makes it grow with every write.
   */
  litestreamBytes: number
}

export class DiskGuard {
  private status_: DiskStatus = {
    freeBytes: Infinity,
    thresholdBytes: 0,
    tripped: false,
    freePageBytes: 0,
    litestreamBytes: 0,
  }
  private checkedAt = -Infinity
  private checkFailing = false
  /** A run of releaseFreePages steps is under way (one at a time). */
  private releasing = false
  /** Set once the trouble below has been logged, until it goes away. */
  private releaseFailing = false
  private keptPagesLogged = false
  private checkQueued = false
  readonly ballastPath: string

  constructor(
    /** The SQLite file; null in PostgreSQL mode, where there is none to guard and the guard is off. */
    private readonly file: DatabaseFile | null,
    private readonly databasePath: string,
    private readonly minFree: MinFree,
    private readonly logger: Logger,
    /** Litestream's files beside the database (shadow WAL): named in the guard's lines and status. */
    private readonly litestreamBytes: () => number = () => 0,
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
    if (this.file === null) return false
    return 'percent' in this.minFree ? this.minFree.percent > 0 : this.minFree.bytes > 0
  }

  /** The file; only called while enabled, which needs one. */
  private get db(): DatabaseFile {
    return this.file!
  }

  /** True while there is room for new mail and new inboxes (cached for a second). */
  hasRoom(): boolean {
    if (!this.enabled) return true
    if (performance.now() - this.checkedAt >= CACHE_MS) this.refreshOrKeep()
    return !this.status_.tripped
  }

  status(): DiskStatus {
    if (this.enabled && performance.now() - this.checkedAt >= CACHE_MS) this.refreshOrKeep()
    return { ...this.status_ }
  }

  /**
   * A volume that fails (statfs or SQLite's PRAGMAs answer an I/O error) keeps the last
   * figures: the writes themselves then fail and are answered as storage failures; the
   * guard adds one warning line when its checks begin to fail, not one per check.
   */
  private refreshOrKeep(): void {
    try {
      this.refresh()
      this.checkFailing = false
    } catch (error) {
      this.checkedAt = performance.now()
      if (!this.checkFailing)
        this.logger.warn('disk_guard_check_failed', { error: error instanceof Error ? error.message : String(error) })
      this.checkFailing = true
    }
  }

  /** Measures now; trips or clears the guard (one warning line each way). */
  refresh(): DiskStatus {
    this.checkedAt = performance.now()
    let { freeBytes, volumeFreeBytes, thresholdBytes, freePageBytes } = this.measure()
    const ballast = this.ballastBytes(thresholdBytes)
    const volumeNeeded = Math.floor(thresholdBytes / 2) + (existsSync(this.ballastPath) ? 0 : ballast)
    // Deletes made room inside the file, but the WAL that wrote them still holds its bytes on
    // the volume (up to ~4 MiB: a checkpoint reuses the file, never shrinks it). On a small
    // volume that alone keeps the guard tripped, so give them back, once per check, while
    // tripped (a rare state, and the checkpoint is only the WAL's pages).
    if (
      this.status_.tripped &&
      freeBytes >= thresholdBytes + ballast &&
      volumeFreeBytes < volumeNeeded &&
      this.db.truncateWal()
    ) {
      ;({ freeBytes, volumeFreeBytes, thresholdBytes, freePageBytes } = this.measure())
    }
    if (freePageBytes > 0 && volumeFreeBytes < this.volumeWanted(thresholdBytes))
      this.releaseFreePagesSoon(this.status_.tripped)
    const volumeFloor = Math.floor(thresholdBytes / 2)
    const litestreamBytes = this.litestreamBytes()
    const fields = {
      free_bytes: freeBytes,
      volume_free_bytes: volumeFreeBytes,
      free_page_bytes: freePageBytes,
      litestream_local_bytes: litestreamBytes,
      threshold_bytes: thresholdBytes,
    }
    let tripped = this.status_.tripped
    if (!tripped && (freeBytes < thresholdBytes || volumeFreeBytes < volumeFloor)) {
      tripped = true
      this.logger.warn('disk_guard_tripped', fields)
    }
    // The ballast is the deletes' reserve: only a delete that meets a full volume releases it
    // (freeing). Released here, on a timer, its room would go to whatever writes next (a
    // message admitted before the guard tripped, Litestream's shadow WAL, another program),
    // and a delete after that would find neither room nor ballast and answer 503.
    if (tripped && freeBytes >= thresholdBytes + ballast && volumeFreeBytes >= volumeNeeded) {
      // The margin of one ballast keeps the guard from flapping once the ballast is back.
      tripped = false
      this.keptPagesLogged = false
      this.logger.warn('disk_guard_cleared', fields)
      this.ensureBallast(thresholdBytes)
    }
    this.status_ = { freeBytes, thresholdBytes, tripped, freePageBytes, litestreamBytes }
    return { ...this.status_ }
  }

  /**
   * The volume's own free space the guard wants before it leaves free pages inside the file:
   * the threshold plus a ballast, above the floor with room for a whole message's WAL.
   */
  private volumeWanted(thresholdBytes: number): number {
    return thresholdBytes + this.ballastBytes(thresholdBytes)
  }

  /**
   * Free pages count as free space, but only the volume's own bytes hold the WAL: a delete on
   * a full volume left the file full of free pages and the volume under its floor, refusing
   * mail for good. So while the volume is short of what the guard wants, free pages go back
   * to it, a step per event-loop turn, until it has that room or none is left. A file
   * created before auto_vacuum = INCREMENTAL keeps them (one warning while the guard is
   * tripped; docs/capacity.md converts it).
   */
  private releaseFreePagesSoon(tripped: boolean): void {
    if (this.releasing) return
    if (!this.db.canReleaseFreePages()) {
      if (tripped && !this.keptPagesLogged)
        this.logger.warn('disk_free_pages_kept', { reason: 'auto_vacuum is not incremental' })
      this.keptPagesLogged ||= tripped
      return
    }
    this.releasing = true
    void this.releaseFreePages().then((released) => {
      this.releasing = false
      // Measure again in a later turn, and only after pages left the file. A run that could
      // release nothing (a reader holding the WAL, a volume full to the last byte) must not
      // start the next one from here: that chain never yields to timers or I/O and holds the
      // process; the next check (a delete, watch()'s timer) tries again.
      if (released > 0) this.checkSoon()
    })
  }

  /** Returns how many pages left the file. */
  private async releaseFreePages(): Promise<number> {
    let released = 0
    for (;;) {
      const { volumeFreeBytes, thresholdBytes, freePageBytes } = this.measure()
      if (freePageBytes === 0 || volumeFreeBytes >= this.volumeWanted(thresholdBytes)) return released
      const { pageSize } = this.db.pages()
      try {
        const step = this.db.releaseFreePages(RELEASE_STEP_BYTES / pageSize)
        if (step === 0) return released
        released += step
        this.releaseFailing = false
      } catch (error) {
        // The volume is full to the last byte (the step's WAL found no room) or failing: the
        // next check tries again; deletes still have their ballast.
        if (!this.releaseFailing)
          this.logger.warn('disk_free_pages_release_failed', {
            error: error instanceof Error ? error.message : String(error),
          })
        this.releaseFailing = true
        return released
      }
      await new Promise((resolve) => setImmediate(resolve))
    }
  }

  /** After a write that freed space: measure in the next turn, not at the next tick of watch(). */
  private checkSoon(): void {
    if (!this.enabled || this.checkQueued) return
    this.checkQueued = true
    setImmediate(() => {
      this.checkQueued = false
      this.refreshOrKeep()
    })
  }

  /** Re-measures every `intervalMs`, so the guard clears after deletes even while no mail arrives. */
  watch(intervalMs = 2_000): () => void {
    if (!this.enabled) return () => {}
    const timer = setInterval(() => this.refreshOrKeep(), intervalMs)
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
   * Runs a write that frees space (deletes, the sweeper) through the storage port. If the
   * volume is so full that even it fails with SQLITE_FULL, the ballast goes and the write is
   * tried once more.
   */
  async freeing<T>(work: () => Promise<T>): Promise<T> {
    try {
      const result = await work()
      this.checkSoon()
      return result
    } catch (error) {
      if (!isFull(error)) throw error
      if (this.releaseBallast('delete_needed_room') > 0) {
        try {
          const result = await work()
          this.checkSoon()
          return result
        } catch (again) {
          if (!isFull(again)) throw again
        }
      }
      throw new DomainError('insufficient_storage', 'The server is out of disk space; retry later.', {
        retryAfterSeconds: 60,
      })
    }
  }

  /**
   * Free pages inside the database count as free space: SQLite fills them before it grows the
   * file, so a delete (an inbox, a message, the sweeper's expired mail) gives room back at once,
   * without an operator vacuuming. The WAL and Litestream's shadow WAL still need bytes on the
   * volume itself, so the volume's own free space has a floor of half the threshold.
   */
  private measure(): { freeBytes: number; volumeFreeBytes: number; thresholdBytes: number; freePageBytes: number } {
    const volume = statfsSync(dirname(this.databasePath))
    const volumeFree = volume.bavail * volume.bsize
    const pages = this.db.pages()
    const freePageBytes = pages.freePages * pages.pageSize
    const sqliteRoom = (pages.maxPageCount - pages.pageCount) * pages.pageSize + freePageBytes
    const thresholdBytes =
      'percent' in this.minFree
        ? Math.ceil((volume.blocks * volume.bsize * this.minFree.percent) / 100)
        : this.minFree.bytes
    const promised = this.inTransit()
    return {
      freeBytes: Math.min(volumeFree + freePageBytes, sqliteRoom) - promised,
      volumeFreeBytes: volumeFree,
      thresholdBytes,
      freePageBytes,
    }
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
      this.logger.warn('disk_ballast_not_created', {
        bytes: size,
        error: error instanceof Error ? error.message : String(error),
      })
    } finally {
      if (fd !== undefined) closeSync(fd)
    }
  }
}
