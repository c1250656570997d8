/**
 * The threads that hold a connection of their own to the database file (checkpointer.ts,
 * blob-stager.ts) start and end alike: a worker built from plain-JS source (no build step),
 * never what keeps the process alive, and closed synchronously, so that when storage's
 * close() returns no other connection holds the file (the WAL is truncated next).
 */

/** How long a close waits for the worker's work in progress and its connection to close. */
const CLOSE_WAIT_MS = 5_000

/**
 * The worker's side of the close, for its source: on `{ type: 'close', done }` it closes its
 * connection (`db`), then signals `done`, however the close went. The worker's statements
 * must come from `db.query()`: close() finalizes those. With one from `db.prepare()` still
 * unfinalized, SQLite only marks the connection closed and keeps it (its lock on the file
 * with it) until the GC finalizes the statement, on the worker's thread, while the server's
 * connection truncates the WAL and closes: that close is then not the last one, and leaves
 * the WAL behind.
 */
export const CLOSE_ON_REQUEST = `
  if (data.type === 'close') {
    try {
      db?.close()
    } finally {
      const done = new Int32Array(data.done)
      Atomics.store(done, 0, 1)
      Atomics.notify(done, 0)
    }
  }`

/** Starts a worker running `source` (a module); the storage's close() ends it. */
export function startFileWorker(source: string): Worker {
  const worker = new Worker(URL.createObjectURL(new Blob([source], { type: 'application/javascript' })))
  ;(worker as Worker & { unref(): void }).unref()
  return worker
}

/** Asks the worker to close its connection, waits for that (bounded), and ends the worker. */
export function closeFileWorker(worker: Worker): void {
  const done = new SharedArrayBuffer(4)
  worker.postMessage({ type: 'close', done })
  Atomics.wait(new Int32Array(done), 0, 0, CLOSE_WAIT_MS)
  worker.terminate()
}
