/**
 * The PostgreSQL adapter's transaction helpers (src/storage/postgres/transaction.ts): work that
 * rolls back with an answer leaves nothing written and resolves with that answer; any other
 * throw rolls back and rejects; an answer belongs to its own transaction only.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { openPostgres, type Sql } from '../../src/storage/postgres/client.ts'
import { postgresDb } from '../../src/storage/postgres/db.ts'
import { settings } from '../../src/storage/postgres/schema.ts'
import { sqlTransaction, transaction } from '../../src/storage/postgres/transaction.ts'
import { describeWithPostgres, migratedDatabase } from '../support/postgres.ts'

setDefaultTimeout(30_000)

describeWithPostgres('PostgreSQL transaction helpers', () => {
  let sql: Sql
  beforeAll(async () => {
    sql = openPostgres(await migratedDatabase(), { max: 2 })
  })
  afterAll(() => sql?.end())
  const stored = async (name: string) =>
    (await sql<{ value: string }[]>`select value from settings where name = ${name}`)[0]?.value ?? null

  test('Drizzle: rolled back with an answer, nothing stays written; committed otherwise', async () => {
    const db = postgresDb(sql)
    const refused = await transaction<string, { refused: 'taken' }>(db, async (tx, rollBackWith) => {
      await tx.insert(settings).values({ name: 'tx-refused', value: 'written' })
      return rollBackWith({ refused: 'taken' })
    })
    expect(refused).toEqual({ refused: 'taken' })
    expect(await stored('tx-refused')).toBeNull()
    const done = await transaction(db, async (tx) => {
      await tx.insert(settings).values({ name: 'tx-done', value: 'written' })
      return 'done'
    })
    expect(done).toBe('done')
    expect(await stored('tx-done')).toBe('written')
  })

  test('postgres.js: the same, and another error still rejects after rolling back', async () => {
    const answer = await sqlTransaction<null, number>(sql, async (tx, rollBackWith) => {
      await tx`insert into settings (name, value) values ('raw-refused', 'written')`
      return rollBackWith(7)
    })
    expect(answer).toBe(7)
    expect(await stored('raw-refused')).toBeNull()
    const failing = sqlTransaction(sql, async (tx) => {
      await tx`insert into settings (name, value) values ('raw-failed', 'written')`
      throw new Error('boom')
    })
    await expect(failing).rejects.toThrow('boom')
    expect(await stored('raw-failed')).toBeNull()
  })

  test("an answer belongs to its own transaction: the outer one's, given inside an inner one, rolls back both", async () => {
    let innerReturned = false
    const outer = await sqlTransaction<string, string>(sql, async (tx, rollBackWithOuter) => {
      await tx`insert into settings (name, value) values ('outer', 'written')`
      await sqlTransaction<string, string>(sql, async (inner) => {
        await inner`insert into settings (name, value) values ('inner', 'written')`
        return rollBackWithOuter('outer answer')
      })
      innerReturned = true
      return 'committed'
    })
    expect({ outer, innerReturned }).toEqual({ outer: 'outer answer', innerReturned: false })
    expect([await stored('outer'), await stored('inner')]).toEqual([null, null])
  })
})
