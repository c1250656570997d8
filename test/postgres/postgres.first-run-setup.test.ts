/**
 * First-run setup happens once across machines: two pools (two machines) submit the setup
 * form at the same moment, each with its own email; exactly one operator is made, the token
 * is gone, and the loser wrote nothing. `create` pauses between the check and its insert, the
 * window in which, without the lock, both machines would count zero users.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { openPostgres, type Queryable, type Sql } from '../../src/storage/postgres/client.ts'
import { completeSetupOnce } from '../../src/storage/postgres/first-run-setup.ts'
import { describeWithPostgres, migratedDatabase } from '../support/postgres.ts'

setDefaultTimeout(60_000)

describeWithPostgres('first-run setup across two machines', () => {
  let machineA: Sql
  let machineB: Sql

  beforeAll(async () => {
    const url = await migratedDatabase()
    machineA = openPostgres(url, { max: 3 })
    machineB = openPostgres(url, { max: 3 })
  })
  afterAll(async () => {
    await Promise.all([machineA.end(), machineB.end()])
  })

  const createOperator = (email: string) => async (tx: Queryable) => {
    await Bun.sleep(150)
    const id = `user_${email}`
    await tx`insert into users (id, email, password_hash, is_operator, created_at) values (${id}, ${email}, 'h', true, '2026-03-10T09:00:00.000Z')`
    return id
  }

  test('two concurrent setups make exactly one operator', async () => {
    await machineA`insert into settings (name, value) values ('setup_token', 'tok')`
    const outcomes = await Promise.all([completeSetupOnce(machineA, 'tok', createOperator('a@x.test')), completeSetupOnce(machineB, 'tok', createOperator('b@x.test'))])
    expect(outcomes.filter((o) => o.done)).toHaveLength(1)
    const operators = await machineA<{ id: string }[]>`select id from users where is_operator`
    expect(operators).toHaveLength(1)
    expect(await machineB`select * from settings where name = 'setup_token'`).toHaveLength(0)

    // Once a user exists, even a freshly planted token sets nothing up.
    await machineA`insert into settings (name, value) values ('setup_token', 'again')`
    expect(await completeSetupOnce(machineB, 'again', createOperator('c@x.test'))).toEqual({ done: false })
    expect(await machineA`select id from users`).toHaveLength(1)
  })

  test('a wrong token sets nothing up', async () => {
    const url = await migratedDatabase()
    const sql = openPostgres(url, { max: 2 })
    try {
      await sql`insert into settings (name, value) values ('setup_token', 'right')`
      expect(await completeSetupOnce(sql, 'wrong', createOperator('a@x.test'))).toEqual({ done: false })
      expect(await sql`select id from users`).toHaveLength(0)
      expect([...(await sql`select value from settings`)]).toEqual([{ value: 'right' }])
    } finally {
      await sql.end()
    }
  })
})
