import type { Database as SQLite } from 'bun:sqlite'
import type { Db, Storage, StorageObserver, Tx } from '../types.ts'
import type { WriteLock } from './blob-stager.ts'
import type { Checkpointer } from './checkpointer.ts'

interface GroupJob {
  bytes: number
  work: (tx: Tx) => unknown
  committed: (() => void) | undefined
  resolve: (value: unknown) => void
  reject: (error: unknown) => void
}

/**
 * A batch writing this much checkpoints in the next event-loop turn instead of inside its
 * COMMIT: SQLite's automatic checkpoint would otherwise copy the batch's WAL frames into the
 * main file in the same turn as writing them, and a 10 MiB message with its attachments
 * (about 17 MiB of blobs) then held the loop past the 50 ms bound. In the server that
 * checkpoint runs on a worker thread (checkpointer.ts); elsewhere in a turn of its own.
 */
const LARGE_WRITE_BYTES = 1024 * 1024

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
export function groupCommitter(
  db: Db,
  sqlite: SQLite,
  durable: () => Promise<void>,
  autocheckpointPages: number,
  observer: () => StorageObserver,
  /** The server's: a large batch's frames are checkpointed on a worker thread instead (checkpointer.ts). */
  checkpoints?: Checkpointer,
  /** The server's: shared with the blob stager's connection (blob-stager.ts); a batch waits for it without blocking. */
  lock?: WriteLock,
): Storage['writeInGroup'] {
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
    if (large && checkpoints) checkpoints.beforeLarge()
    else if (large) sqlite.exec('PRAGMA wal_autocheckpoint = 0')
    try {
      return commit()
    } finally {
      sqlite.exec('PRAGMA synchronous = FULL')
      if (large && checkpoints) checkpoints.largeCommitted()
      else if (large) {
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
      const value = withoutInlineSync([job], () => db.transaction((tx) => job.work(tx), { behavior: 'immediate' }))
      job.committed?.()
      void settle([job], [value])
    } catch (error) {
      observer().failed(error)
      job.reject(error)
    }
  }
  const flush = () => {
    // While the stager writes a row, the batch waits (jobs keep joining it) for the worker to
    // let go, instead of holding the event loop in SQLite's busy handler.
    if (lock && !lock.tryTake()) return lock.whenFree(flush)
    try {
      flushNow()
    } finally {
      lock?.give()
    }
  }
  const flushNow = () => {
    const jobs = queue
    queue = []
    if (jobs.length === 0) return
    let values: unknown[]
    try {
      values = withoutInlineSync(jobs, () =>
        db.transaction((tx) => jobs.map((job) => job.work(tx)), { behavior: 'immediate' }),
      )
    } catch {
      for (const job of jobs) runAlone(job)
      return
    }
    for (const job of jobs) job.committed?.()
    void settle(jobs, values)
  }
  return <T>(work: (tx: Tx) => T, bytes = 0, committed?: () => void) =>
    new Promise<T>((resolve, reject) => {
      if (queue.length === 0) setImmediate(flush)
      queue.push({ work, bytes, committed, resolve: resolve as (value: unknown) => void, reject })
    })
}
