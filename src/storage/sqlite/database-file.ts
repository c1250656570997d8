/**
 * The SQLite file as the free-space guard sees it (../port/database-file.ts): its pages, the
 * WAL truncation and the incremental vacuum that give bytes back to the volume.
 */
import type { Database as SQLite } from 'bun:sqlite'
import type { DatabaseFile } from '../port/database-file.ts'

/** How long a statement waits for another connection's lock (the CLI beside the server). */
export const BUSY_TIMEOUT_MS = 5000

/**
 * Folds the WAL into the main file and truncates it to nothing, giving its bytes back to the
 * volume; true when it did. Without waiting: Litestream always holds a read lock, and a
 * checkpoint that waited out the busy timeout would hold the caller 5 s (it then just does
 * less, and answers busy).
 */
export function truncateWal(sqlite: SQLite): boolean {
  try {
    sqlite.exec('PRAGMA busy_timeout = 0')
    const { busy } = sqlite.query('PRAGMA wal_checkpoint(TRUNCATE)').get() as { busy: number }
    return busy === 0
  } catch {
    return false // another connection may hold the WAL
  } finally {
    sqlite.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`)
  }
}

const pragmaValue = (sqlite: SQLite, name: string): number =>
  Object.values(sqlite.query(`PRAGMA ${name}`).get() as Record<string, number>)[0]!

/** Whether deletes can give the file's free pages back to the volume (auto_vacuum = INCREMENTAL). */
export function canReleaseFreePages(sqlite: SQLite): boolean {
  return pragmaValue(sqlite, 'auto_vacuum') === 2
}

/**
 * Gives up to `pages` of the file's free pages back to the volume: an incremental vacuum moves
 * the live pages near the end of the file into free ones, and the checkpoint after it cuts the
 * file to its new length. Returns how many pages left the file; 0 when none could (no free
 * pages, a file still in auto_vacuum NONE, or a reader holding the WAL, so that the file is
 * only cut at a later checkpoint). The vacuum changes no row, so it commits without the
 * fsync of synchronous = FULL; the checkpoint syncs the file.
 */
function releaseFreePages(sqlite: SQLite, pages: number): number {
  const before = pragmaValue(sqlite, 'page_count')
  sqlite.exec('PRAGMA synchronous = NORMAL')
  try {
    sqlite.exec(`PRAGMA incremental_vacuum(${Math.max(1, Math.floor(pages))})`)
  } finally {
    sqlite.exec('PRAGMA synchronous = FULL')
  }
  if (!truncateWal(sqlite)) return 0
  return Math.max(0, before - pragmaValue(sqlite, 'page_count'))
}

export function sqliteDatabaseFile(sqlite: SQLite): DatabaseFile {
  return {
    pages: () => ({
      pageSize: pragmaValue(sqlite, 'page_size'),
      pageCount: pragmaValue(sqlite, 'page_count'),
      freePages: pragmaValue(sqlite, 'freelist_count'),
      maxPageCount: pragmaValue(sqlite, 'max_page_count'),
    }),
    truncateWal: () => truncateWal(sqlite),
    canReleaseFreePages: () => canReleaseFreePages(sqlite),
    releaseFreePages: (pages) => releaseFreePages(sqlite, pages),
  }
}
