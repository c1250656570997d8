/**
 * The server checkpoints large commits on a worker thread (src/storage/sqlite/checkpointer.ts):
 * the automatic checkpoint of its connection pauses after a large commit and resumes once the
 * worker has copied it, the WAL starts over under a steady stream of commits (no checkpoint
 * starvation), and close() waits for a checkpoint in progress so the WAL is folded back.
 */
import { afterEach, beforeEach, expect, setDefaultTimeout, test } from 'bun:test'
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openStorage, type Storage } from '../../src/storage/database.ts'
import { organizations, settings } from '../../src/storage/sqlite/schema.ts'
import { until } from '../support/wait.ts'

// A hang's deadline, not a speed: a worker's start and checkpoints on a busy machine.
setDefaultTimeout(30_000)

const MiB = 1024 * 1024
let dir: string
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'pigeonhole-checkpointer-'))
})
afterEach(() => {
  rmSync(dir, { recursive: true, force: true })
})

/** A row of `bytes` as one job of the group commit, as an inbound message's blobs are written. */
const writeBlob = (storage: Storage, name: string, bytes: number) =>
  storage.writeInGroup(
    (tx) =>
      tx
        .insert(settings)
        .values({ name, value: Buffer.alloc(bytes, name.charCodeAt(0)).toString('latin1') })
        .run(),
    bytes,
  )

test('a large commit is checkpointed by the worker; the automatic checkpoint waits for it, then resumes', async () => {
  const path = join(dir, 'db.sqlite')
  const storage = openStorage(path, { checkpointInWorker: true })
  const autocheckpoint = () =>
    (storage.sqlite.query('PRAGMA wal_autocheckpoint').get() as { wal_autocheckpoint: number }).wal_autocheckpoint
  expect(autocheckpoint()).toBe(250)
  const before = statSync(path).size
  await writeBlob(storage, 'big', 12 * MiB)
  // Paused right after the commit: the next commit on this connection must not copy those
  // 12 MiB in its own turn. (Without a worker it is back at once and a turn of this thread
  // checkpoints.)
  expect(autocheckpoint()).toBe(0)
  await until(() => statSync(path).size >= before + 12 * MiB, 'the worker to copy the commit into the main file')
  await until(() => autocheckpoint() === 250, 'the automatic checkpoint to resume')
  storage.close()
  expect(existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0).toBe(0)
})

test('under a steady stream of small commits, with large ones among them, the WAL starts over', async () => {
  const path = join(dir, 'db.sqlite')
  const storage = openStorage(path, { checkpointInWorker: true })
  let largest = 0
  for (let n = 0; n < 600; n++) {
    // A small write every millisecond or so (as API writes and small mail are), a 2 MiB one now and then.
    storage.write((tx) =>
      tx
        .insert(organizations)
        .values({ id: `org_${n}`, name: `org ${n}`, createdAt: '2026-01-01T00:00:00.000Z' })
        .run(),
    )
    if (n % 25 === 0) await writeBlob(storage, `blob ${n}`, 2 * MiB)
    largest = Math.max(largest, existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0)
    await Bun.sleep(1)
  }
  // 48 MiB written in all: a WAL that never started over would hold all of it (72 MB with
  // checkpoints on the worker alone, here). The file keeps its high-water mark, which is the
  // writes of one checkpoint's duration, so the bound leaves a busy machine room.
  console.log(`WAL high-water mark: ${(largest / MiB).toFixed(1)} MiB for 48 MiB written`)
  expect(largest).toBeLessThan(40 * MiB)
  storage.close()
})

test('close() waits for a checkpoint in progress, then folds the WAL back into the file', async () => {
  const path = join(dir, 'db.sqlite')
  const storage = openStorage(path, { checkpointInWorker: true })
  await writeBlob(storage, 'big', 24 * MiB)
  storage.close() // the worker is copying the 24 MiB right now
  expect(existsSync(`${path}-wal`) ? statSync(`${path}-wal`).size : 0).toBe(0)
  expect(statSync(path).size).toBeGreaterThan(24 * MiB)
})
