/**
 * The group commit's durability: a job's promise (and so an SMTP 250) settles only after
 * the WAL has been synced to disk, the connection is back to synchronous=FULL for every
 * other write, and a new database file gets the larger page size while an existing one
 * keeps its own. The fsync is held by wrapping node:fs's (not one of our modules).
 */
import { afterEach, beforeEach, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import fs, { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { NEW_DATABASE_PAGE_SIZE, openStorage } from '../../src/storage/database.ts'
import { organizations } from '../../src/storage/sqlite/schema.ts'
import { until } from '../support/wait.ts'

let dir: string
const realFsync = fs.fsync
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'pigeonhole-walsync-'))
})
afterEach(() => {
  fs.fsync = realFsync
  rmSync(dir, { recursive: true, force: true })
})

const org = (id: string) => ({ id, name: id, createdAt: '2026-01-01T00:00:00.000Z' })

test('writeInGroup settles only after the WAL fsync returns, and one sync serves a whole batch', async () => {
  const storage = openStorage(join(dir, 'db.sqlite'))
  const held: Array<() => void> = []
  const synced: string[] = []
  fs.fsync = ((fd: number, callback: (error: Error | null) => void) => {
    synced.push(fs.readlinkSync(`/proc/self/fd/${fd}`))
    held.push(() => realFsync(fd, callback))
  }) as typeof fs.fsync
  let settled = 0
  const writes = ['org_a', 'org_b'].map((id) =>
    storage.writeInGroup((tx) => tx.insert(organizations).values(org(id)).run()).then(() => settled++),
  )
  await until(() => held.length > 0, "the group's WAL sync to be asked for", { intervalMs: 0 })
  // Committed (visible to the connection) but not yet acknowledged: the sync is still held.
  expect(storage.sqlite.query('SELECT count(*) AS n FROM organizations').get()).toEqual({ n: 2 })
  await Bun.sleep(20) // proves nothing happens: no write settles while its sync is held
  expect(settled).toBe(0)
  expect(held).toHaveLength(1)
  expect(synced).toEqual([join(dir, 'db.sqlite-wal')])
  held.shift()!()
  await Promise.all(writes)
  expect(settled).toBe(2)
  // Back to FULL (2) for writes outside the group commit.
  expect(storage.sqlite.query('PRAGMA synchronous').get()).toEqual({ synchronous: 2 })
  storage.close()
})

test('a job hears that it committed before its sync returns; a job that fails never does', async () => {
  const storage = openStorage(join(dir, 'db.sqlite'))
  const held: Array<() => void> = []
  fs.fsync = ((fd: number, callback: (error: Error | null) => void) => {
    held.push(() => realFsync(fd, callback))
  }) as typeof fs.fsync
  const heard: string[] = []
  const kept = storage.writeInGroup(
    (tx) => tx.insert(organizations).values(org('org_a')).run(),
    0,
    () => heard.push('org_a'),
  )
  const failed = storage.writeInGroup(
    (tx) => tx.insert(organizations).values(org('org_a')).run(), // the same id: fails, alone
    0,
    () => heard.push('duplicate'),
  )
  await until(() => held.length > 0, 'the WAL sync to be asked for', { intervalMs: 0 })
  expect(heard).toEqual(['org_a'])
  await expect(failed).rejects.toThrow()
  held.shift()!()
  await kept
  expect(heard).toEqual(['org_a'])
  storage.close()
})

test('a failed WAL sync fails the jobs waiting for it instead of acknowledging them', async () => {
  const storage = openStorage(join(dir, 'db.sqlite'))
  fs.fsync = ((_fd: number, callback: (error: Error | null) => void) =>
    callback(new Error('EIO: simulated'))) as typeof fs.fsync
  await expect(storage.writeInGroup((tx) => tx.insert(organizations).values(org('org_a')).run())).rejects.toThrow('EIO')
  storage.close()
})

test('a new database gets the larger page size and checkpoints at the same WAL size; an existing one keeps its own', () => {
  const fresh = openStorage(join(dir, 'new.sqlite'))
  expect(fresh.sqlite.query('PRAGMA page_size').get()).toEqual({ page_size: NEW_DATABASE_PAGE_SIZE })
  // The WAL is still checkpointed at about 4 MiB, not after 1,000 of the larger pages.
  expect(fresh.sqlite.query('PRAGMA wal_autocheckpoint').get()).toEqual({ wal_autocheckpoint: 250 })
  fresh.close()
  const oldPath = join(dir, 'old.sqlite')
  const old = new Database(oldPath, { create: true })
  old.exec('PRAGMA page_size = 4096')
  old.exec('CREATE TABLE kept (x)')
  old.close()
  const reopened = openStorage(oldPath)
  expect(reopened.sqlite.query('PRAGMA page_size').get()).toEqual({ page_size: 4096 })
  expect(reopened.sqlite.query('PRAGMA wal_autocheckpoint').get()).toEqual({ wal_autocheckpoint: 1000 })
  reopened.close()
})
