/**
 * The console's sign-in throttle counted across machines: two pools on one database stand
 * for two machines, sharing one injected clock and core's rules. Parallel guesses from both
 * meet the same limits as on one machine; a slowed account hands out each check time once.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { ManualClock } from '../../src/clock.ts'
import {
  ACCOUNT_SLOW_AFTER,
  FAILURES_PER_ACCOUNT_AND_ADDRESS,
  FAILURES_PER_ADDRESS,
  SIGN_IN_RULES,
  SIGN_IN_WINDOW_MS,
} from '../../src/core/users/sign-in-throttle.ts'
import { openPostgres, type Sql } from '../../src/storage/postgres/client.ts'
import { createSignInFailures, type SignInFailures } from '../../src/storage/postgres/sign-in-failures.ts'
import { describeWithPostgres, migratedDatabase } from '../support/postgres.ts'

setDefaultTimeout(60_000)

// The rules core hands the PostgreSQL counts in production.
const rules = SIGN_IN_RULES

describeWithPostgres('sign-in throttle counts across two machines', () => {
  let machineA: Sql
  let machineB: Sql
  let a: SignInFailures
  let b: SignInFailures
  const clock = new ManualClock('2026-03-10T09:00:00.000Z')

  beforeAll(async () => {
    const url = await migratedDatabase()
    machineA = openPostgres(url, { max: 5 })
    machineB = openPostgres(url, { max: 5 })
    a = createSignInFailures(machineA, clock, rules)
    b = createSignInFailures(machineB, clock, rules)
  })
  afterAll(async () => {
    await Promise.all([machineA.end(), machineB.end()])
  })

  const admitted = (results: { admitted: boolean }[]) => results.filter((r) => r.admitted).length

  test('one account from one address: 20 guesses at once on two machines admit exactly 5; the pair is refused until the window ends', async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).begin('ada@example.com', '203.0.113.1', 'mark-1')),
    )
    expect(admitted(results)).toBe(FAILURES_PER_ACCOUNT_AND_ADDRESS)
    expect(results.find((r) => !r.admitted)).toEqual({ admitted: false, refused: 'pair', retryAfterSeconds: 900 })
    // Not aimed at the owner: the same account from another address still gets in.
    expect(await b.check('ada@example.com', '198.51.100.7', 'mark-1')).toBeNull()
    clock.advance(SIGN_IN_WINDOW_MS)
    expect(await a.check('ada@example.com', '203.0.113.1', 'mark-1')).toBeNull()
    expect(await a.sweep()).toBe(3)
  })

  test('a spray from one address over many accounts admits exactly 20 across both machines', async () => {
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).begin(`user${i}@example.com`, '203.0.113.2')),
    )
    expect(admitted(results)).toBe(FAILURES_PER_ADDRESS)
    expect(results.find((r) => !r.admitted)).toMatchObject({ admitted: false, refused: 'address' })
  })

  test('a slowed account spaces checks 2 s apart across machines, each turn given once, and refuses past the 10 s wait', async () => {
    for (let i = 0; i < ACCOUNT_SLOW_AFTER; i++)
      expect((await a.begin('bob@example.com', `192.0.2.${i}`, 'mark-b')).admitted).toBe(true)
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).begin('bob@example.com', `192.0.2.${100 + i}`, 'mark-b')),
    )
    const waits = results.flatMap((r) => (r.admitted ? [r.waitMs] : [])).sort((x, y) => x - y)
    expect(waits).toEqual([0, 2000, 4000, 6000, 8000, 10000])
    expect(results.find((r) => !r.admitted)).toEqual({ admitted: false, refused: 'account', retryAfterSeconds: 2 })
  })

  test('a success forgives the account; a new password forgives its counts; an unchecked attempt takes its counts back', async () => {
    for (let i = 0; i < 4; i++) await a.begin('cy@example.com', '203.0.113.3', 'mark-c')
    await a.begin('cy@example.com', '203.0.113.3', 'mark-c')
    await b.finish('cy@example.com', '203.0.113.3', 'not_checked') // the fifth was never checked
    expect((await b.begin('cy@example.com', '203.0.113.3', 'mark-c')).admitted).toBe(true)
    expect((await b.begin('cy@example.com', '203.0.113.3', 'mark-c')).admitted).toBe(false)
    // The operator resets the password: counts made against the old one no longer apply.
    expect((await a.begin('cy@example.com', '203.0.113.3', 'mark-c2')).admitted).toBe(true)
    await a.finish('cy@example.com', '203.0.113.3', 'succeeded')
    const rows = await machineA<
      { slot: string }[]
    >`select slot from sign_in_failures where slot = 'account:cy@example.com'`
    expect(rows).toHaveLength(0)
  })

  test('client input over 200 characters is stored as its digest and still counted', async () => {
    const long = `${'x'.repeat(300)}@example.com`
    const results = await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 ? a : b).begin(long, '203.0.113.4')))
    expect(admitted(results)).toBe(FAILURES_PER_ACCOUNT_AND_ADDRESS)
    const [row] = await machineA<{ n: number }[]>`select max(length(slot))::int as n from sign_in_failures`
    expect(row!.n).toBeLessThanOrEqual(200)
  })
})
