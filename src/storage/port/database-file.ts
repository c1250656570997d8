/**
 * What the free-space guard (src/core/runtime/disk-guard.ts) needs of a database kept in one file
 * beside the server: the file's page figures, and the two ways it gives bytes back to the
 * volume. The SQLite adapter provides it (src/storage/sqlite/database-file.ts). PostgreSQL
 * mode has no such file and provides none: the guard is then off, as the database's own host
 * watches its disk.
 */
export interface DatabaseFile {
  /** Figures of the file now; they change with every write. */
  pages(): FilePages
  /**
   * Folds the write-ahead log into the file and cuts it to nothing, without waiting for a
   * reader; true when it did.
   */
  truncateWal(): boolean
  /** Whether free pages can leave the file at all (a file made before incremental vacuum keeps them). */
  canReleaseFreePages(): boolean
  /** Gives up to `pages` free pages back to the volume; how many left the file (0 when none could). */
  releaseFreePages(pages: number): number
}

export interface FilePages {
  pageSize: number
  /** Pages in the file now, free ones included. */
  pageCount: number
  /** Pages inside the file that hold nothing (what deletes gave back, reused before the file grows). */
  freePages: number
  /** The most pages the file may hold (a cap an operator or a test may set). */
  maxPageCount: number
}
