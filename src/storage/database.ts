/**
 * Opening the SQLite file: PRAGMAs, migrations and the transaction helper live here only.
 */
import { Database as SQLite } from 'bun:sqlite'
import { existsSync, mkdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { drizzle, type BunSQLiteDatabase } from 'drizzle-orm/bun-sqlite'
import { migrate } from 'drizzle-orm/bun-sqlite/migrator'
import * as schema from './schema.ts'

export type Db = BunSQLiteDatabase<typeof schema>
/** What a transaction callback receives; it has the same query API as Db. */
export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0]
export type DbOrTx = Db | Tx

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
   * data. `work` must be synchronous.
   */
  writeInGroup<T>(work: (tx: Tx) => T): Promise<T>
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
function reuseStatements(sqlite: SQLite): void {
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
}

interface GroupJob {
  work: (tx: Tx) => unknown
  resolve: (value: unknown) => void
  reject: (error: unknown) => void
}

/**
 * Under synchronous=FULL each commit waits for an fsync on the only JS thread; with several
 * SMTP connections delivering at once, sharing that wait is the largest ingest win
 * (bench/README.md). Jobs queued while one batch commits form the next batch.
 * The happy path runs the jobs back to back in one transaction, without a savepoint per
 * job (savepoints cost memory for no benefit here). If any job throws, the whole batch is
 * rolled back and each job runs again in a transaction of its own, so a failure stays alone.
 */
function groupCommitter(db: Db): Storage['writeInGroup'] {
  let queue: GroupJob[] = []
  const runAlone = (job: GroupJob) => {
    try {
      job.resolve(db.transaction((tx) => job.work(tx), { behavior: 'immediate' }))
    } catch (error) {
      job.reject(error)
    }
  }
  const flush = () => {
    const jobs = queue
    queue = []
    let values: unknown[]
    try {
      values = db.transaction((tx) => jobs.map((job) => job.work(tx)), { behavior: 'immediate' })
    } catch {
      for (const job of jobs) runAlone(job)
      return
    }
    for (const [i, job] of jobs.entries()) job.resolve(values[i])
  }
  return <T>(work: (tx: Tx) => T) =>
    new Promise<T>((resolve, reject) => {
      if (queue.length === 0) setImmediate(flush)
      queue.push({ work, resolve: resolve as (value: unknown) => void, reject })
    })
}

export function openStorage(path: string): Storage {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
  const sqlite = new SQLite(path, { create: true, strict: true })
  sqlite.exec('PRAGMA journal_mode = WAL')
  // FULL: an SMTP 250 is sent after commit, and must survive a power cut, not just a crash.
  sqlite.exec('PRAGMA synchronous = FULL')
  sqlite.exec('PRAGMA foreign_keys = ON')
  // The CLI writes to the same file while the server runs; wait instead of failing.
  sqlite.exec('PRAGMA busy_timeout = 5000')
  reuseStatements(sqlite)
  const db = drizzle(sqlite, { schema })
  migrate(db, { migrationsFolder: migrationsFolder() })
  return {
    db,
    sqlite,
    write: (work) => db.transaction(work, { behavior: 'immediate' }),
    writeInGroup: groupCommitter(db),
    close: () => {
      // Fold the WAL back into the main file so a copied .db is complete on its own. Without
      // waiting: Litestream always holds a read lock, and a checkpoint that waits out the
      // busy timeout would delay every stop by 5 s (the checkpoint then just does less).
      try {
        sqlite.exec('PRAGMA busy_timeout = 0')
        sqlite.exec('PRAGMA wal_checkpoint(TRUNCATE)')
      } catch {
        // another connection may hold the WAL; closing is still safe
      }
      sqlite.close()
    },
  }
}
