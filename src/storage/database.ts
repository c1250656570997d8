/**
 * Opening the SQLite file: PRAGMAs, migrations and the transaction helper live here only.
 */
import { Database as SQLite } from 'bun:sqlite'
import fs, { closeSync, existsSync, mkdirSync, openSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { drizzle, type BunSQLiteDatabase } from 'drizzle-orm/bun-sqlite'
import { migrate } from 'drizzle-orm/bun-sqlite/migrator'
import * as schema from './schema.ts'

export type Db = BunSQLiteDatabase<typeof schema>
/** What a transaction callback receives; it has the same query API as Db. */
export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0]
export type DbOrTx = Db | Tx

/**
 * Told about every commit and every failed write, so a failing volume is noticed by whatever
 * write meets it first and its end by the first commit after it (src/core/storage-health.ts).
 * The storage module itself stays free of logging and policy.
 */
export interface StorageObserver {
  committed(): void
  failed(error: unknown): unknown
}

const quietObserver: StorageObserver = { committed: () => {}, failed: () => {} }

export interface Storage {
  db: Db
  sqlite: SQLite
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
   * job of LARGE_WRITE_BYTES or more checkpoints in a turn of its own (groupCommitter).
   */
  writeInGroup<T>(work: (tx: Tx) => T, bytes?: number): Promise<T>
  /** Set once by the composition root; a quiet default until then (the CLI keeps it). */
  observer: StorageObserver
  close(): void
}

/**
 * drizzle/ sits at the repository root: two folders up from src/storage/, one up from
 * dist/ when running the production bundle (`bun run build`).
 */
function migrationsFolder(): string {
  const candidates = [join(import.meta.dir, '..', '..', 'drizzle'), join(import.meta.dir, '..', 'drizzle')]
  const found = candidates.find((folder) => existsSync(join(folder, 'meta', '_journal.json')))
  if (!found) throw new Error(`migrations not found (looked in ${candidates.join(', ')})`)
  return found
}

/**
 * Drizzle calls `prepare()` for every query it runs, so SQLite compiled the same SQL again
 * on each request and each SMTP step (a measurable share of a list read's CPU, see
 * bench/README.md), leaving the old statements to the GC. Drizzle binds values as
 * parameters, so the SQL text depends only on the query's shape: a small, bounded set.
 * Reusing one compiled statement per text is safe because bun:sqlite runs a statement to
 * completion synchronously and Drizzle binds fresh parameters on every call.
 */
function reuseStatements(sqlite: SQLite): { finalizeAll(): void } {
  const compile = sqlite.prepare.bind(sqlite)
  const compiled = new Map<string, ReturnType<SQLite['prepare']>>()
  const MAX = 500 // far above the number of distinct query shapes; a guard, not a cache policy
  sqlite.prepare = ((sql: string, ...rest: unknown[]) => {
    if (rest.length > 0) return (compile as (...args: unknown[]) => ReturnType<SQLite['prepare']>)(sql, ...rest)
    let statement = compiled.get(sql)
    if (!statement) {
      statement = compile(sql)
      if (compiled.size < MAX) compiled.set(sql, statement)
    }
    return statement
  }) as SQLite['prepare']
  return {
    // Without this the closed connection keeps its file handles until the GC collects the
    // statements (SQLite's close waits for them), which keeps a volume from being unmounted.
    finalizeAll: () => {
      for (const statement of compiled.values()) statement.finalize()
      compiled.clear()
    },
  }
}

interface GroupJob {
  bytes: number
  work: (tx: Tx) => unknown
  resolve: (value: unknown) => void
  reject: (error: unknown) => void
}

/**
 * Makes committed WAL frames durable with an fsync of the WAL file on Bun's thread pool,
 * one at a time: every caller waiting when a sync starts is released when it ends; callers
 * arriving meanwhile share the next one. Under synchronous=FULL SQLite makes exactly this
 * fsync inside COMMIT, on the only JS thread (1.5 ms per commit on average on the shared
 * bench disk, up to 400 ms in bad moments). fsync covers the file's data whichever
 * descriptor asks, so frames that are in the WAL when the sync starts survive a power cut
 * when it returns; frames a checkpoint already moved into the main file were synced by the
 * checkpoint itself (SQLite syncs the WAL before and the database after each checkpoint in
 * NORMAL mode too).
 */
function walSyncer(walPath: string): { durable: () => Promise<void>; close: () => void } {
  let fd: number | null = null
  let syncing = false
  let closing = false
  let waiting: Array<{ resolve: () => void; reject: (error: unknown) => void }> = []
  const release = () => {
    if (fd !== null) closeSync(fd)
    fd = null
  }
  const start = () => {
    const batch = waiting
    waiting = []
    syncing = true
    const done = (error: unknown) => {
      syncing = false
      for (const waiter of batch) error ? waiter.reject(error) : waiter.resolve()
      if (waiting.length > 0) start()
      else if (closing) release()
    }
    try {
      fd ??= openSync(walPath, 'r')
      // Read from the module object at call time (not a bound import), so a test can hold a sync.
      fs.fsync(fd, done)
    } catch (error) {
      done(error)
    }
  }
  return {
    durable: () =>
      new Promise<void>((resolve, reject) => {
        waiting.push({ resolve, reject })
        if (!syncing) start()
      }),
    // A sync still running keeps its descriptor until it returns.
    close: () => {
      closing = true
      if (!syncing) release()
    },
  }
}

/**
 * Group commit: jobs queued while one batch commits form the next batch, and the batch
 * shares one transaction and one fsync (bench/README.md). The transaction commits with
 * synchronous=NORMAL (no fsync inside COMMIT, so the event loop does not wait for the
 * disk); the jobs' promises settle only after walSyncer has synced the WAL, which gives
 * the same power-loss guarantee as FULL for everything acknowledged. The happy path runs
 * the jobs back to back without a savepoint per job (savepoints cost memory for no
 * benefit here). If any job throws, the batch is rolled back and each job runs again in a
 * transaction of its own, so a failure stays alone.
 */
/**
 * A batch writing this much checkpoints in the next event-loop turn instead of inside its
 * COMMIT: SQLite's automatic checkpoint would otherwise copy the batch's WAL frames into the
 * main file in the same turn as writing them, and a 10 MiB message with its attachments
 * (about 17 MiB of blobs) then held the loop past the 50 ms bound.
 */
export const LARGE_WRITE_BYTES = 1024 * 1024

function groupCommitter(db: Db, sqlite: SQLite, durable: () => Promise<void>, autocheckpointPages: number, observer: () => StorageObserver): Storage['writeInGroup'] {
  let queue: GroupJob[] = []
  let checkpointQueued = false
  const checkpointSoon = () => {
    if (checkpointQueued) return
    checkpointQueued = true
    setImmediate(() => {
      checkpointQueued = false
      try {
        // PASSIVE, like the automatic one: it never waits for readers (Litestream holds one).
        sqlite.exec('PRAGMA wal_checkpoint(PASSIVE)')
      } catch {
        // the next automatic checkpoint catches up
      }
    })
  }
  const withoutInlineSync = <T>(jobs: GroupJob[], commit: () => T): T => {
    const large = jobs.some((job) => job.bytes >= LARGE_WRITE_BYTES)
    sqlite.exec('PRAGMA synchronous = NORMAL')
    if (large) sqlite.exec('PRAGMA wal_autocheckpoint = 0')
    try {
      return commit()
    } finally {
      sqlite.exec('PRAGMA synchronous = FULL')
      if (large) {
        sqlite.exec(`PRAGMA wal_autocheckpoint = ${autocheckpointPages}`)
        checkpointSoon()
      }
    }
  }
  const settle = (jobs: GroupJob[], values: unknown[]) =>
    durable().then(
      () => {
        observer().committed()
        for (const [i, job] of jobs.entries()) job.resolve(values[i])
      },
      (error) => {
        observer().failed(error)
        for (const job of jobs) job.reject(error)
      },
    )
  const runAlone = (job: GroupJob) => {
    try {
      void settle([job], [withoutInlineSync([job], () => db.transaction((tx) => job.work(tx), { behavior: 'immediate' }))])
    } catch (error) {
      observer().failed(error)
      job.reject(error)
    }
  }
  const flush = () => {
    const jobs = queue
    queue = []
    let values: unknown[]
    try {
      values = withoutInlineSync(jobs, () => db.transaction((tx) => jobs.map((job) => job.work(tx)), { behavior: 'immediate' }))
    } catch {
      for (const job of jobs) runAlone(job)
      return
    }
    void settle(jobs, values)
  }
  return <T>(work: (tx: Tx) => T, bytes = 0) =>
    new Promise<T>((resolve, reject) => {
      if (queue.length === 0) setImmediate(flush)
      queue.push({ work, bytes, resolve: resolve as (value: unknown) => void, reject })
    })
}

/** Page size given to a database file created by this process (SQLite's default is 4096). */
export const NEW_DATABASE_PAGE_SIZE = 16384
const BUSY_TIMEOUT_MS = 5000

/** SQLite's default checkpoint point (1,000 pages of 4 KiB), in bytes. */
const WAL_CHECKPOINT_BYTES = 1000 * 4096

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

export function openStorage(path: string): Storage {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
  const isNew = path === ':memory:' || !existsSync(path) || statSync(path).size === 0
  const sqlite = new SQLite(path, { create: true, strict: true })
  // Only a file without tables takes a new page size (an existing one keeps its own: see
  // docs/capacity.md). Larger pages cut the per-page work of writing message blobs.
  if (isNew) sqlite.exec(`PRAGMA page_size = ${NEW_DATABASE_PAGE_SIZE}`)
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
  const storage: Storage = {
    db,
    sqlite,
    observer: quietObserver,
    write: (work) => {
      let result: ReturnType<typeof work>
      try {
        result = db.transaction(work, { behavior: 'immediate' })
      } catch (error) {
        storage.observer.failed(error)
        throw error
      }
      storage.observer.committed()
      return result
    },
    writeInGroup: groupCommitter(db, sqlite, wal.durable, autocheckpointPages, () => storage.observer),
    close: () => {
      // Fold the WAL back into the main file so a copied .db is complete on its own.
      truncateWal(sqlite)
      wal.close()
      statements.finalizeAll()
      sqlite.close()
    },
  }
  return storage
}
