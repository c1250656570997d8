/**
 * The checkpoints of large commits, on a thread of their own. A checkpoint copies the WAL's
 * frames into the main file: for a 10 MiB message with its attachments (about 17 MiB of
 * blobs) that took 20 ms of CPU here and up to 70 ms of wall time in a turn of the event
 * loop, and under a flood of such messages it held the loop, and /health with it, far longer.
 * On a second connection, in a worker, the copy runs beside the event loop: a PASSIVE
 * checkpoint takes only the checkpoint lock, so the server's connection keeps reading and
 * committing meanwhile.
 *
 * Small commits keep SQLite's automatic checkpoint on the server's connection: right after
 * its own commit nothing else writes, so it copies every frame and the next commit starts the
 * WAL over. A checkpoint on the worker, always trailing a stream of commits, never does that:
 * alone it let the WAL grow without end (72 MB for 48 MiB written, in the test), and RESTART
 * or TRUNCATE checkpoints, which would, hold the server's writers off for their copy and
 * sync, on the event loop (a /health of 3.2 s in the big-mail flood). So after a large commit
 * the automatic checkpoint is paused (it would copy those frames in the next commit's turn),
 * the worker copies them, and the automatic one resumes once the worker has caught up with
 * every large commit, left with the small tail. If the worker is busy when the automatic one
 * runs, that one gives up at once (it never waits).
 *
 * Durability is unchanged: a commit is acknowledged after the WAL sync (wal-sync.ts), and
 * SQLite syncs the WAL before a checkpoint and the main file after it, whichever connection
 * runs it.
 */
import { CLOSE_ON_REQUEST, closeFileWorker, startFileWorker } from './file-worker.ts'

/** Runs in the worker: one connection, one PASSIVE checkpoint per request. Plain JS, so no build step is needed. */
export const WORKER_SOURCE = `
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
      result = db.query('PRAGMA wal_checkpoint(PASSIVE)').get()
    } catch (error) {
      result = { error: String(error) }
    }
    postMessage({ type: 'checkpointed', result })
    return
  }
${CLOSE_ON_REQUEST}
}
`

export interface Checkpointer {
  /**
   * Before a commit that writes a lot: pauses the automatic checkpoint on the server's
   * connection (`setAutocheckpoint(0)`). After it, call `largeCommitted`.
   */
  beforeLarge(): void
  /** After that commit: the worker copies its frames, then the automatic checkpoint resumes. */
  largeCommitted(): void
  /** Waits (synchronously, bounded) for a checkpoint in progress, closes the worker's connection. */
  close(): void
}

/** `setAutocheckpoint(pages)` sets the server connection's wal_autocheckpoint (0 pauses it). */
export function startCheckpointer(
  path: string,
  autocheckpointPages: number,
  setAutocheckpoint: (pages: number) => void,
): Checkpointer {
  const worker = startFileWorker(WORKER_SOURCE)
  let ready = false
  let running = false
  let closed = false
  let failed = false
  /** A large commit whose frames no checkpoint has started on yet. */
  let pending = false
  let paused = false

  const resume = () => {
    if (!paused) return
    paused = false
    setAutocheckpoint(autocheckpointPages)
  }
  const start = () => {
    if (!ready || running || closed || !pending) return
    running = true
    pending = false
    worker.postMessage({ type: 'checkpoint' })
  }
  worker.onmessage = ({ data }: MessageEvent) => {
    if (data.type === 'opened') {
      ready = true
      start()
    } else if (data.type === 'checkpointed') {
      running = false
      // Another large commit came meanwhile: copy it too before the automatic one resumes. A
      // reader in the way (busy) or a failure leaves the rest to the automatic checkpoint.
      if (pending) start()
      else resume()
    } else if (data.type === 'failed') {
      // The worker cannot open the file (not expected: this process has it open): checkpoints
      // stay with SQLite's automatic one.
      failed = true
      resume()
    }
  }
  worker.postMessage({ type: 'open', path })

  return {
    beforeLarge() {
      if (closed || failed) return
      paused = true
      setAutocheckpoint(0)
    },
    largeCommitted() {
      if (closed || failed) return resume()
      pending = true
      start()
    },
    close() {
      if (closed) return
      closed = true
      // Synchronous, like the storage's close(): the caller truncates the WAL next, which a
      // checkpoint still running on the other connection would make fail.
      closeFileWorker(worker)
    },
  }
}
