/**
 * The threads with a connection of their own to the database file (the checkpointer and the
 * blob stager, src/storage/sqlite/file-worker.ts) really close it when asked: once a worker
 * has signalled its close, none of its connection is left, so the server's close is the last
 * one and SQLite folds the WAL back and removes it. A statement the worker left unfinalized
 * keeps its connection open until the GC finalizes it, which storage's close() met as a race
 * with the worker thread's teardown: under load the WAL was left behind, whole. The first two
 * tests do not terminate the worker, so such a leftover connection stays and fails them every
 * time; the last checks the whole close as the server runs it.
 */
import { afterEach, beforeEach, expect, setDefaultTimeout, test } from 'bun:test'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openStorage } from '../../src/storage/database.ts'
import { stagerOf } from '../../src/storage/sqlite/blob-stager.ts'
import { WORKER_SOURCE as STAGER_SOURCE } from '../../src/storage/sqlite/blob-stager-worker.ts'
import { WORKER_SOURCE as CHECKPOINTER_SOURCE } from '../../src/storage/sqlite/checkpointer.ts'
import { startFileWorker } from '../../src/storage/sqlite/file-worker.ts'
import { settings } from '../../src/storage/sqlite/schema.ts'
import { until } from '../support/wait.ts'

// A hang's deadline, not a speed: a worker's start on a busy machine.
setDefaultTimeout(30_000)

let dir: string
let path: string
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'pigeonhole-file-workers-'))
  path = join(dir, 'db.sqlite')
})
afterEach(() => {
  rmSync(dir, { recursive: true, force: true })
})

/** Posts `message` and resolves with the worker's first reply of type `type`. */
function ask(worker: Worker, message: Record<string, unknown>, type: string): Promise<Record<string, unknown>> {
  return new Promise((resolve) => {
    const listener = ({ data }: MessageEvent) => {
      if (data.type !== type) return
      worker.removeEventListener('message', listener)
      resolve(data)
    }
    worker.addEventListener('message', listener)
    worker.postMessage(message)
  })
}

/** The worker's side of storage's close, without ending the thread (which would finalize what it left). */
async function closeConnection(worker: Worker): Promise<void> {
  const done = new Int32Array(new SharedArrayBuffer(4))
  worker.postMessage({ type: 'close', done: done.buffer })
  await until(() => Atomics.load(done, 0) === 1, 'the worker to close its connection')
}

const walLeft = () => existsSync(`${path}-wal`)

test('the stager’s worker, once closed, holds no connection: the server’s close removes the WAL', async () => {
  const storage = openStorage(path)
  const worker = startFileWorker(STAGER_SOURCE)
  try {
    const lock = new SharedArrayBuffer(8)
    expect((await ask(worker, { type: 'open', path, lock }, 'opened')).cleared).toBe(0)
    // Every statement it keeps runs once: two inserts and the removal of rows not stored.
    const bytes = () => new Uint8Array(16).buffer
    const rows = [
      { messageId: 'msg_staged', bytes: bytes(), sha256: '0' },
      { attachmentId: 'att_staged', bytes: bytes(), sha256: '0' },
    ]
    expect((await ask(worker, { type: 'stage', id: 1, rows }, 'staged')).error).toBeUndefined()
    const unstage = { type: 'unstage', id: 2, messageIds: ['msg_staged'], attachmentIds: ['att_staged'] }
    await ask(worker, unstage, 'unstaged')
    await closeConnection(worker)
    storage.close()
    expect(walLeft()).toBe(false)
  } finally {
    worker.terminate()
  }
})

test('the checkpointer’s worker, once closed, holds no connection: the server’s close removes the WAL', async () => {
  const storage = openStorage(path)
  const worker = startFileWorker(CHECKPOINTER_SOURCE)
  try {
    await ask(worker, { type: 'open', path }, 'opened')
    await storage.write((tx) => tx.insert(settings).values({ name: 'a', value: 'b' }).run())
    expect((await ask(worker, { type: 'checkpoint' }, 'checkpointed')).result).toMatchObject({ busy: 0 })
    await closeConnection(worker)
    storage.close()
    expect(walLeft()).toBe(false)
  } finally {
    worker.terminate()
  }
})

test('the server’s storage, with both workers used, leaves no connection after close(): the WAL is removed', async () => {
  const storage = openStorage(path, { checkpointInWorker: true })
  await stagerOf(storage)!.stage([{ messageId: 'msg_staged', bytes: new Uint8Array(16), sha256: '0' }])
  await stagerOf(storage)!.unstage(['msg_staged'], [])
  await storage.writeInGroup(
    (tx) =>
      tx
        .insert(settings)
        .values({ name: 'big', value: 'x'.repeat(2 << 20) })
        .run(),
    2 << 20,
  )
  storage.close()
  expect(walLeft()).toBe(false)
})
