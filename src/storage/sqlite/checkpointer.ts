/**
 * WAL checkpoints on a thread of their own. A checkpoint copies the WAL's frames into the
 * main file: for a 10 MiB message with its attachments (about 17 MiB of blobs) that took 20
 * ms of CPU here and up to 70 ms of wall time, and under a flood of such messages checkpoints
 * held the event loop, and /health with it, for far longer. On a second connection, in a
 * worker, the copy runs beside the event loop: in WAL mode a checkpoint takes only the
 * checkpoint lock, so the server's connection keeps reading and committing meanwhile.
 *
 * The server's connection then never checkpoints by itself (wal_autocheckpoint = 0). It
 * tells the checkpointer of each commit; once the WAL file has grown by WAL_CHECKPOINT_BYTES,
 * or a second after the last commit, a checkpoint runs, one at a time. It is
 * PASSIVE (like SQLite's automatic one: it never waits for a writer or for a reader such as
 * Litestream), then RESTART for the frames committed meanwhile, without waiting either: SQLite
 * starts the WAL over only after a checkpoint that copied every frame, and PASSIVE ones that
 * always trail a commit let the WAL grow without end (72 MB for 48 MiB written, in the test).
 * RESTART holds new writers off for its copy, which is only that tail; TRUNCATE, which is
 * RESTART that also empties the file, gives the WAL's bytes back to the volume as the
 * automatic checkpoint's reuse of the file kept them at about 4 MiB (the free-space guard
 * counts on that on small volumes).
 *
 * Durability is unchanged: a commit is acknowledged after the WAL sync (wal-sync.ts), and
 * SQLite syncs the WAL before a checkpoint and the main file after it, whichever connection
 * runs it.
 */

import { statSync } from 'node:fs'

/** Runs in the worker: one connection, one PASSIVE checkpoint per request. Plain JS, so no build step is needed. */
const WORKER_SOURCE = `
import { Database } from 'bun:sqlite'
let db = null
self.onmessage = ({ data }) => {
  if (data.type === 'open') {
    try {
      db = new Database(data.path)
      db.exec('PRAGMA busy_timeout = 0')
      postMessage({ type: 'opened' })
    } catch (error) {
      postMessage({ type: 'failed', error: String(error) })
    }
    return
  }
  if (data.type === 'checkpoint') {
    let result = null
    try {
      db.query('PRAGMA wal_checkpoint(PASSIVE)').get()
      // The frames committed meanwhile, with new writers held off for that short copy, and the
      // file emptied. Busy (a writer or a reader in the way) costs nothing: it does not wait.
      result = db.query('PRAGMA wal_checkpoint(TRUNCATE)').get()
    } catch (error) {
      result = { error: String(error) }
    }
    postMessage({ type: 'checkpointed', result })
    return
  }
  if (data.type === 'close') {
    try {
      db?.close()
    } finally {
      const done = new Int32Array(data.done)
      Atomics.store(done, 0, 1)
      Atomics.notify(done, 0)
    }
  }
}
`

/** How long close() waits for a checkpoint in progress to end and the worker's connection to close. */
const CLOSE_WAIT_MS = 5_000
/** A commit too small to reach the byte mark is checkpointed at most this long after it. */
const IDLE_CHECKPOINT_MS = 1_000

export interface Checkpointer {
  /** After a commit. */
  wrote(): void
  /** Waits (synchronously, bounded) for a checkpoint in progress, closes the worker's connection. */
  close(): void
}

/**
 * `everyBytes`: how much the WAL file may grow before a checkpoint is asked for. Measured on
 * the file (an fstat per commit, about a microsecond), not from what the commits say they
 * wrote: a 200 KB message puts about 2.5 times that into the WAL (source, text, pages).
 */
export function startCheckpointer(path: string, everyBytes: number): Checkpointer {
  const worker = new Worker(URL.createObjectURL(new Blob([WORKER_SOURCE], { type: 'application/javascript' })))
  // Never what keeps the process alive: the storage's close() ends it.
  ;(worker as Worker & { unref(): void }).unref()
  const walPath = `${path}-wal`
  const walSize = () => statSync(walPath, { throwIfNoEntry: false })?.size ?? 0
  let ready = false
  let running = false
  let closed = false
  /** Committed since the last checkpoint began (or it left frames behind). */
  let dirty = false
  /** The WAL file's size when the last checkpoint began or ended. */
  let sizeSeen = 0
  let idleTimer: ReturnType<typeof setTimeout> | null = null

  const armIdle = () => {
    if (idleTimer || closed) return
    idleTimer = setTimeout(start, IDLE_CHECKPOINT_MS)
    ;(idleTimer as { unref?: () => void }).unref?.()
  }
  const start = () => {
    if (idleTimer) clearTimeout(idleTimer)
    idleTimer = null
    if (!ready || running || closed || !dirty) return
    running = true
    dirty = false
    sizeSeen = walSize()
    worker.postMessage({ type: 'checkpoint' })
  }
  worker.onmessage = ({ data }: MessageEvent) => {
    if (data.type === 'opened') {
      ready = true
      start()
    } else if (data.type === 'checkpointed') {
      running = false
      // Busy (a reader such as Litestream in the way), or frames committed during it: go again
      // once the WAL has grown by the mark again, or on the idle timer.
      const { busy, log, checkpointed } = (data.result ?? {}) as { busy?: number; log?: number; checkpointed?: number }
      if (busy !== 0 || log !== checkpointed) dirty = true
      sizeSeen = Math.min(sizeSeen, walSize())
      if (dirty && walSize() - sizeSeen >= everyBytes) start()
      else if (dirty) armIdle()
    }
    // 'failed' (the worker could not open the file): commits go on, the WAL is checkpointed at
    // close; the server's own connection has the file open, so this is not expected.
  }
  worker.postMessage({ type: 'open', path })

  return {
    wrote() {
      if (closed) return
      dirty = true
      if (walSize() - sizeSeen >= everyBytes) start()
      else armIdle()
    },
    close() {
      if (closed) return
      closed = true
      if (idleTimer) clearTimeout(idleTimer)
      const done = new SharedArrayBuffer(4)
      worker.postMessage({ type: 'close', done })
      // Synchronous, like the storage's close(): the caller truncates the WAL next, which a
      // checkpoint still running on the other connection would make fail.
      Atomics.wait(new Int32Array(done), 0, 0, CLOSE_WAIT_MS)
      worker.terminate()
    },
  }
}
