/**
 * Large blobs written on a thread of their own, before the message's transaction. Inserting a
 * 10 MiB raw message and its attachments (about 17 MiB of blob rows) inside the group commit
 * held the event loop 20–40 ms of CPU here (most of it SQLite copying overflow pages and
 * writing WAL frames), past the 25 ms a turn may take, and under a flood of such messages it
 * held /health with it. A worker with its own connection writes those rows first, each in a
 * short transaction of its own; the message's transaction on the server's connection then
 * writes only the metadata rows, which makes the blobs part of a message.
 *
 * Why nobody sees half a message: the staged rows (message_sources, attachment_contents) are
 * keyed by the message's and attachments' ids, which exist only once the message's
 * transaction commits, and every read reaches a blob through its message (getSource finds the
 * message first, getAttachment joins attachments and messages). The worker's connection runs
 * without foreign-key enforcement for exactly this: the children are written before their
 * parents. A staged row whose message was not stored (an inbox deleted since RCPT, a refusal,
 * a failed commit) is removed at once; one left by a crash between staging and commit is
 * removed when the server next starts, before it accepts mail.
 *
 * Durability: the worker commits without an fsync (synchronous=NORMAL); its frames precede the
 * message's commit in the WAL, and the WAL sync the 250 waits for (wal-sync.ts) covers them.
 * A checkpoint that moved them into the main file first synced that file itself.
 *
 * One writer at a time: SQLite allows one, and the server's thread must never wait for the
 * worker inside a turn (a busy handler sleeping there is the stall this file removes). So the
 * two threads share a small lock (WriteLock below): the group commit takes it without waiting
 * and, when the worker holds it, runs its batch when the worker lets go; the worker waits
 * (on its own thread) and gives way to a waiting batch between two of its rows.
 */
import { FREE, OWNER, SERVER, SERVER_WAITING, WORKER_SOURCE } from './blob-stager-worker.ts'
import { closeFileWorker, startFileWorker } from './file-worker.ts'

/** Messages whose blobs (raw plus attachments) reach this many bytes are staged. */
export const STAGE_FROM_BYTES = 1024 * 1024

/** One blob row to stage: a raw message (messageId) or an attachment's bytes (attachmentId). */
export type StagedRow =
  | { messageId: string; bytes: Uint8Array; sha256: string }
  | { attachmentId: string; bytes: Uint8Array; sha256: string }

/**
 * The lock the server's connection shares with the worker's. `tryTake` never waits: it
 * answers false while the worker writes, and `whenFree` then calls back once it let go.
 */
export interface WriteLock {
  tryTake(): boolean
  /**
   * For a synchronous write that cannot be put off (Storage.write): waits on this thread for
   * the worker's row in progress. False when this thread already holds the lock (nothing to give).
   */
  takeWaiting(): boolean
  give(): void
  whenFree(then: () => void): void
}

export interface BlobStager {
  readonly lock: WriteLock
  /** False once the worker could not open the file: blobs are then written in the message's transaction. */
  readonly usable: boolean
  /**
   * Writes `rows`, each in a transaction of its own; resolves once all are committed (not yet
   * synced). The rows' bytes are handed over (transferred): the caller must not read them
   * again. On failure nothing of it is left and the promise rejects with the SQLite error.
   */
  stage(rows: StagedRow[]): Promise<void>
  /** Removes staged rows whose message or attachment row does not exist (was never stored). */
  unstage(messageIds: string[], attachmentIds: string[]): Promise<void>
  /** Waits (synchronously, bounded) for the row in progress, closes the worker's connection. */
  close(): void
}

/** The row's bytes as an ArrayBuffer of their own, to transfer (copied only when they share one). */
function ownBuffer(bytes: Uint8Array): ArrayBuffer {
  const whole =
    bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer
  return whole
    ? (bytes.buffer as ArrayBuffer)
    : (bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer)
}

/**
 * Starts the worker on the file at `path` (already open and migrated by this process). The
 * promise resolves once its connection is open and rows left by a crash are removed, with
 * their count; it rejects if the worker cannot open the file.
 */
export function startBlobStager(path: string): { stager: BlobStager; opened: Promise<number> } {
  const worker = startFileWorker(WORKER_SOURCE)
  const cells = new Int32Array(new SharedArrayBuffer(8))
  let nextId = 1
  let closed = false
  let failed = false
  const pending = new Map<number, { resolve: () => void; reject: (error: unknown) => void }>()
  const waitingForFree: Array<() => void> = []
  let settleOpen: { resolve: (cleared: number) => void; reject: (error: unknown) => void } | undefined
  const opened = new Promise<number>((resolve, reject) => (settleOpen = { resolve, reject }))
  opened.catch(() => {}) // a failure only turns staging off (usable); a caller may still await it

  const lock: WriteLock = {
    tryTake() {
      if (Atomics.compareExchange(cells, OWNER, FREE, SERVER) === FREE) return true
      // Say so first, then look again: a worker that let go in between saw no waiter.
      Atomics.store(cells, SERVER_WAITING, 1)
      return Atomics.compareExchange(cells, OWNER, FREE, SERVER) === FREE
    },
    takeWaiting() {
      if (Atomics.load(cells, OWNER) === SERVER) return false
      Atomics.store(cells, SERVER_WAITING, 1)
      for (
        let owner = Atomics.compareExchange(cells, OWNER, FREE, SERVER);
        owner !== FREE;
        owner = Atomics.compareExchange(cells, OWNER, FREE, SERVER)
      )
        Atomics.wait(cells, OWNER, owner, 20)
      return true
    },
    give() {
      Atomics.store(cells, SERVER_WAITING, 0)
      Atomics.store(cells, OWNER, FREE)
      Atomics.notify(cells, OWNER)
      Atomics.notify(cells, SERVER_WAITING)
    },
    whenFree(then) {
      waitingForFree.push(then)
    },
  }
  const runWaiting = () => {
    for (const then of waitingForFree.splice(0)) then()
  }

  worker.onmessage = ({ data }: MessageEvent) => {
    if (data.type === 'opened') settleOpen?.resolve(data.cleared)
    else if (data.type === 'failed') {
      failed = true
      settleOpen?.reject(new Error(`blob stager: ${data.error}`))
    } else if (data.type === 'free') runWaiting()
    else {
      const call = pending.get(data.id)
      pending.delete(data.id)
      if (data.error) call?.reject(Object.assign(new Error(data.error.message), { code: data.error.code }))
      else call?.resolve()
    }
  }
  // A worker that dies (not expected: every request catches its errors) must not take the
  // lock with it: staging stops, the lock is freed, and a batch waiting for it runs.
  const died = (why: string) => {
    if (closed || failed) return
    failed = true
    settleOpen?.reject(new Error(`blob stager: ${why}`))
    for (const call of pending.values()) call.reject(new Error(`blob stager: ${why}`))
    pending.clear()
    Atomics.store(cells, OWNER, FREE)
    Atomics.notify(cells, OWNER)
    runWaiting()
  }
  worker.addEventListener('error', (event) => died((event as ErrorEvent).message ?? 'worker error'))
  worker.addEventListener('close', () => died('worker exited'))
  worker.postMessage({ type: 'open', path, lock: cells.buffer })

  const request = (message: Record<string, unknown>, transfer: ArrayBuffer[] = []) => {
    if (closed) return Promise.reject(new Error('blob stager is closed'))
    const id = nextId++
    return new Promise<void>((resolve, reject) => {
      pending.set(id, { resolve, reject })
      worker.postMessage({ ...message, id }, transfer)
    })
  }

  const stager: BlobStager = {
    lock,
    get usable() {
      return !failed && !closed
    },
    stage(rows) {
      const transfer: ArrayBuffer[] = []
      const wire = rows.map((row) => {
        const bytes = ownBuffer(row.bytes)
        if (!transfer.includes(bytes)) transfer.push(bytes)
        return { ...row, bytes }
      })
      return request({ type: 'stage', rows: wire }, transfer)
    },
    unstage(messageIds, attachmentIds) {
      if (messageIds.length === 0 && attachmentIds.length === 0) return Promise.resolve()
      return request({ type: 'unstage', messageIds, attachmentIds })
    },
    close() {
      if (closed) return
      closed = true
      closeFileWorker(worker)
      for (const call of pending.values()) call.reject(new Error('blob stager is closed'))
      pending.clear()
      runWaiting() // a batch waiting for the lock runs now (and meets the closed database)
    },
  }
  return { stager, opened }
}

/** The stager of each server's storage (set by openStorage); the CLI's storage has none. */
const stagers = new WeakMap<object, BlobStager>()

export function attachStager(storage: object, stager: BlobStager): void {
  stagers.set(storage, stager)
}

export function stagerOf(storage: object): BlobStager | undefined {
  return stagers.get(storage)
}
