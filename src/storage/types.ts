/**
 * What the rest of the server holds of its database: the query API, the two ways to write,
 * and the observer told about commits and failures. src/storage/sqlite/ implements it.
 */
import type { Database as SQLite } from 'bun:sqlite'
import type { BunSQLiteDatabase } from 'drizzle-orm/bun-sqlite'
import type { DatabaseFile } from './port/database-file.ts'
import type { StorageObserver } from './port/observer.ts'
import type * as schema from './sqlite/schema.ts'

export type { StorageObserver } from './port/observer.ts'

export type Db = BunSQLiteDatabase<typeof schema>
/** What a transaction callback receives; it has the same query API as Db. */
export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0]
export type DbOrTx = Db | Tx

export interface Storage {
  db: Db
  sqlite: SQLite
  /** The file's pages and the ways it gives bytes back to the volume, for the disk guard. */
  file: DatabaseFile
  /**
   * Runs `work` in one IMMEDIATE transaction (takes the write lock up front, so two
   * writers never deadlock on a lock upgrade). `work` must be synchronous: an await
   * inside would let part of it commit outside the transaction.
   */
  write<T>(work: (tx: Tx) => T): T
  /**
   * Group commit: `work` joins every other job queued in this event-loop turn, and all of
   * them commit in ONE transaction (one fsync); a job that throws is rolled back alone (the
   * others are re-run without it, so `work` must be safe to run twice). The promise settles
   * after the COMMIT, so a caller that acknowledges on resolve acknowledges only durable
   * data. `work` must be synchronous. `bytes` is roughly what it writes; a batch holding a
   * job of LARGE_WRITE_BYTES or more checkpoints in a turn of its own (groupCommitter), unless
   * the storage checkpoints on a worker thread (the server's: checkpointer.ts). `committed`
   * is called once the job's transaction has committed, before the sync the promise waits
   * for (never for a job that fails).
   */
  writeInGroup<T>(work: (tx: Tx) => T, bytes?: number, committed?: () => void): Promise<T>
  /** Set once by the composition root; a quiet default until then (the CLI keeps it). */
  observer: StorageObserver
  close(): void
}
