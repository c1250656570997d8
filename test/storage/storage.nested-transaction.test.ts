/**
 * The SQLite adapter's transaction (src/storage/sqlite/transaction.ts): an operation called
 * inside another's transaction, or inside a job of the group commit, joins it instead of
 * opening a second one, so the two commit together or not at all.
 */
import { afterEach, beforeEach, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { openStorage, type Storage, type Tx } from '../../src/storage/database.ts'
import { organizations } from '../../src/storage/sqlite/schema.ts'
import { transaction, transactionInGroup } from '../../src/storage/sqlite/transaction.ts'
import { scratchDir } from '../support/scratch.ts'

let dir: string
let storage: Storage
beforeEach(() => {
  dir = scratchDir('pigeonhole-nested-')
  storage = openStorage(join(dir, 'db.sqlite'))
})
afterEach(() => {
  storage.close()
  rmSync(dir, { recursive: true, force: true })
})

const insertOrg = (tx: Tx, id: string) =>
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

test('a nested transaction joins the outer one: both commit together', () => {
  let innerTx: Tx | undefined
  let outerTx: Tx | undefined
  transaction(storage, (tx) => {
    outerTx = tx
    insertOrg(tx, 'org_outer')
    transaction(storage, (inner) => {
      innerTx = inner
      insertOrg(inner, 'org_inner')
    })
    // Nothing is committed until the outer transaction ends.
    expect(committedIds()).toEqual([])
  })
  expect(innerTx).toBe(outerTx!)
  expect(committedIds()).toEqual(['org_inner', 'org_outer'])
})

test('a throw after the nested call rolls back what the nested call wrote', () => {
  expect(() =>
    transaction(storage, (tx) => {
      transaction(storage, (inner) => insertOrg(inner, 'org_inner'))
      insertOrg(tx, 'org_outer')
      throw new Error('the outer verb fails after its nested verb')
    }),
  ).toThrow('the outer verb fails')
  expect(committedIds()).toEqual([])
  // The handle is usable again: the next transaction is a fresh one that commits.
  transaction(storage, (tx) => insertOrg(tx, 'org_after'))
  expect(committedIds()).toEqual(['org_after'])
})

test('a verb called from a group-commit job joins the batch instead of beginning a second transaction', async () => {
  let jobTx: Tx | undefined
  let innerTx: Tx | undefined
  const ids = await Promise.all([
    transactionInGroup(storage, (tx) => {
      jobTx = tx
      insertOrg(tx, 'org_a')
      transaction(storage, (inner) => {
        innerTx = inner
        insertOrg(inner, 'org_a_nested')
      })
      return 'a'
    }),
    transactionInGroup(storage, (tx) => {
      insertOrg(tx, 'org_b')
      return 'b'
    }),
  ])
  expect(ids).toEqual(['a', 'b'])
  expect(innerTx).toBe(jobTx!)
  expect(committedIds()).toEqual(['org_a', 'org_a_nested', 'org_b'])
})
