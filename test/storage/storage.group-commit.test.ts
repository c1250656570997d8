/**
 * Group commit (storage.writeInGroup): jobs of one event-loop turn share one transaction,
 * a failing job is rolled back alone, and every promise settles only after COMMIT.
 */
import { afterEach, beforeEach, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { openStorage, type Storage } from '../../src/storage/database.ts'
import { organizations } from '../../src/storage/sqlite/schema.ts'
import { scratchDir } from '../support/scratch.ts'

let dir: string
let storage: Storage
beforeEach(() => {
  dir = scratchDir('pigeonhole-group-')
  storage = openStorage(join(dir, 'db.sqlite'))
})
afterEach(() => {
  storage.close()
  rmSync(dir, { recursive: true, force: true })
})

const insertOrg = (id: string) => (tx: Parameters<Parameters<Storage['write']>[0]>[0]) =>
  tx.insert(organizations).values({ id, name: id, createdAt: '2026-01-01T00:00:00.000Z' }).run()

/** What another connection (a reader, or the file after a crash) sees. */
function committedIds(): string[] {
  const other = new Database(join(dir, 'db.sqlite'), { readonly: true })
  const ids = (other.query('SELECT id FROM organizations ORDER BY id').all() as Array<{ id: string }>).map(
    (row) => row.id,
  )
  other.close()
  return ids
}

test('a job that throws is rolled back alone; the others of its batch commit', async () => {
  const results = await Promise.allSettled([
    storage.writeInGroup(insertOrg('org_a')),
    storage.writeInGroup((tx) => {
      insertOrg('org_b')(tx)
      throw new Error('job b fails after writing')
    }),
    storage.writeInGroup(insertOrg('org_c')),
  ])
  expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
  expect(committedIds()).toEqual(['org_a', 'org_c'])
})

test('each promise resolves only once its data is visible to other connections', async () => {
  const seenAtResolve: string[][] = []
  await Promise.all(
    ['org_x', 'org_y'].map((id) => storage.writeInGroup(insertOrg(id)).then(() => seenAtResolve.push(committedIds()))),
  )
  for (const seen of seenAtResolve) expect(seen).toEqual(['org_x', 'org_y'])
})

test('jobs queued while a batch runs form the next batch, in order', async () => {
  const order: string[] = []
  const first = storage.writeInGroup((tx) => {
    insertOrg('org_1')(tx)
    order.push('1')
  })
  const second = first.then(() =>
    storage.writeInGroup((tx) => {
      insertOrg('org_2')(tx)
      order.push('2')
    }),
  )
  await Promise.all([first, second])
  expect(order).toEqual(['1', '2'])
  expect(committedIds()).toEqual(['org_1', 'org_2'])
})

test('when the database refuses writes, every job is rejected and nothing is stored', async () => {
  storage.sqlite.exec('PRAGMA query_only = ON')
  const results = await Promise.allSettled([
    storage.writeInGroup(insertOrg('org_p')),
    storage.writeInGroup(insertOrg('org_q')),
  ])
  storage.sqlite.exec('PRAGMA query_only = OFF')
  expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected'])
  expect(committedIds()).toEqual([])
})
