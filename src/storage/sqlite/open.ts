/**
 * Opening the SQLite file: its PRAGMAs, the migrations, the write transaction helper, and the
 * Storage put together from the mechanisms beside this file (statement reuse, the WAL sync,
 * group commit, the file's pages as the disk guard sees them).
 */
import { Database as SQLite } from 'bun:sqlite'
import { existsSync, mkdirSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { drizzle } from 'drizzle-orm/bun-sqlite'
import { migrate } from 'drizzle-orm/bun-sqlite/migrator'
import * as schema from './schema.ts'
import type { Storage, StorageObserver } from '../types.ts'
import { attachStager, type BlobStager, startBlobStager } from './blob-stager.ts'
import { type Checkpointer, startCheckpointer } from './checkpointer.ts'
import { BUSY_TIMEOUT_MS, sqliteDatabaseFile, truncateWal } from './database-file.ts'
import { groupCommitter } from './group-commit.ts'
import { reuseStatements } from './statements.ts'
import { walSyncer } from './wal-sync.ts'

/**
 * drizzle/ sits at the repository root: three folders up from src/storage/sqlite/, one up
 * from dist/ when running the production bundle (`bun run build`).
 */
function migrationsFolder(): string {
  const candidates = [join(import.meta.dir, '..', '..', '..', 'drizzle'), join(import.meta.dir, '..', 'drizzle')]
  const found = candidates.find((folder) => existsSync(join(folder, 'meta', '_journal.json')))
  if (!found) throw new Error(`migrations not found (looked in ${candidates.join(', ')})`)
  return found
}

/** Page size given to a database file created by this process (SQLite's default is 4096). */
export const NEW_DATABASE_PAGE_SIZE = 16384

/** SQLite's default checkpoint point (1,000 pages of 4 KiB), in bytes. */
const WAL_CHECKPOINT_BYTES = 1000 * 4096

const quietObserver: StorageObserver = { committed: () => {}, failed: () => {} }

export interface OpenOptions {
  /**
   * Checkpoint large commits on a worker thread (checkpointer.ts), and write large message
   * blobs on another before their transaction (blob-stager.ts), rather than in a turn of
   * this connection: the server's choice, made under its lock on the file (the stager's start
   * removes rows a crashed server staged). A short-lived user (the CLI) keeps both here.
   */
  checkpointInWorker?: boolean
}

/** Opens (creating it if need be) and migrates the file at `path`, or an in-memory database. */
export function openStorage(path: string, options: OpenOptions = {}): Storage {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
  const isNew = path === ':memory:' || !existsSync(path) || statSync(path).size === 0
  const sqlite = new SQLite(path, { create: true, strict: true })
  // Only a file without tables takes a new page size (an existing one keeps its own: see
  // docs/capacity.md). Larger pages cut the per-page work of writing message blobs.
  if (isNew) sqlite.exec(`PRAGMA page_size = ${NEW_DATABASE_PAGE_SIZE}`)
  // Likewise only for a new file (an existing one needs a VACUUM to change: docs/capacity.md):
  // free pages can then be given back to the volume, a few at a time (releaseFreePages), when
  // a full volume needs the room that deletes made inside the file.
  if (isNew) sqlite.exec('PRAGMA auto_vacuum = INCREMENTAL')
  sqlite.exec('PRAGMA journal_mode = WAL')
  // SQLite checkpoints after a number of WAL pages (1,000): keep it at the same ~4 MiB of
  // WAL whatever the page size, or 16 KiB pages would let the WAL grow to 16 MiB first.
  const { page_size: pageSize } = sqlite.query('PRAGMA page_size').get() as { page_size: number }
  const autocheckpointPages = Math.max(1, Math.round(WAL_CHECKPOINT_BYTES / pageSize))
  sqlite.exec(`PRAGMA wal_autocheckpoint = ${autocheckpointPages}`)
  // FULL: what is acknowledged must survive a power cut, not just a crash. The group commit
  // of inbound mail gets the same guarantee with its own WAL sync (groupCommitter).
  sqlite.exec('PRAGMA synchronous = FULL')
  sqlite.exec('PRAGMA foreign_keys = ON')
  // The CLI writes to the same file while the server runs; wait instead of failing.
  sqlite.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`)
  const statements = reuseStatements(sqlite)
  const db = drizzle(sqlite, { schema })
  migrate(db, { migrationsFolder: migrationsFolder() })
  const wal = path === ':memory:' ? { durable: () => Promise.resolve(), close: () => {} } : walSyncer(`${path}-wal`)
  let checkpoints: Checkpointer | undefined
  let stager: BlobStager | undefined
  if (options.checkpointInWorker && path !== ':memory:') {
    checkpoints = startCheckpointer(path, autocheckpointPages, (pages) =>
      sqlite.exec(`PRAGMA wal_autocheckpoint = ${pages}`),
    )
    stager = startBlobStager(path).stager
  }
  const storage: Storage = {
    db,
    sqlite,
    file: sqliteDatabaseFile(sqlite),
    observer: quietObserver,
    write: (work) => {
      let result: ReturnType<typeof work>
      // Waits out a staged row in progress here, precisely, rather than in SQLite's busy handler.
      const took = stager?.lock.takeWaiting() ?? false
      try {
        result = db.transaction(work, { behavior: 'immediate' })
      } catch (error) {
        storage.observer.failed(error)
        throw error
      } finally {
        if (took) stager?.lock.give()
      }
      storage.observer.committed()
      return result
    },
    writeInGroup: groupCommitter(
      db,
      sqlite,
      wal.durable,
      autocheckpointPages,
      () => storage.observer,
      checkpoints,
      stager?.lock,
    ),
    close: () => {
      stager?.close()
      checkpoints?.close()
      // Fold the WAL back into the main file so a copied .db is complete on its own.
      truncateWal(sqlite)
      wal.close()
      statements.finalizeAll()
      sqlite.close()
    },
  }
  if (stager) attachStager(storage, stager)
  return storage
}
