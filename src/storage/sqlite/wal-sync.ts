import fs, { closeSync, openSync } from 'node:fs'

/**
 * Makes committed WAL frames durable with an fsync of the WAL file on Bun's thread pool,
 * one at a time: every caller waiting when a sync starts is released when it ends; callers
 * arriving meanwhile share the next one. Under synchronous=FULL SQLite makes exactly this
 * fsync inside COMMIT, on the only JS thread (its cost on the bench disk: bench/README.md).
 * fsync covers the file's data whichever descriptor asks, so frames that are in the WAL when
 * the sync starts survive a power cut when it returns; frames a checkpoint already moved into
 * the main file were synced by the checkpoint itself (SQLite syncs the WAL before and the
 * database after each checkpoint in NORMAL mode too).
 */
export function walSyncer(walPath: string): { durable: () => Promise<void>; close: () => void } {
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
