/**
 * RCPT TO answers within its bound whatever the database does, and a unit held after that
 * bound is given back. A recipient's admission is two waits on the database (the inbox's
 * lookup, then the quota hold under the organisation's lock); each may take up to the
 * statement timeout, so together they took twice the documented bound (24 s against ~12 s by
 * default). Here a lock on `inboxes` delays the lookup and one on `quota_reservations` the
 * hold, each for less than the statement timeout but together for more than the bound: RCPT
 * answers 451 at the bound, the hold that lands afterwards is released rather than left
 * counting against the organisation (while the session is still open), and the same session
 * then delivers normally, counted once.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { ADMISSION_MARGIN_MS } from '../../src/core/inbound/admission.ts'
import { openPostgres, type Sql } from '../../src/storage/postgres/client.ts'
import { expectDocumentedEvents } from '../support/log-events.ts'
import { type MachineProcess, machineApi, pgMachine } from '../support/pg-processes.ts'
import { describeWithPostgres, migratedDatabase } from '../support/postgres.ts'
import { SmtpClient, simpleMessage } from '../support/smtp.ts'
import { timed, until } from '../support/wait.ts'

setDefaultTimeout(60_000)

/** The machine's DATABASE_STATEMENT_TIMEOUT_MS: long enough that each lock below stays inside it. */
const STATEMENT_TIMEOUT_MS = 6_000
const BOUND_MS = STATEMENT_TIMEOUT_MS + ADMISSION_MARGIN_MS
/** When each lock is let go, from the RCPT: the lookup's before its statement timeout, the hold's after the bound and before its own timeout. */
const LOOKUP_FREED_MS = 5_000
const HOLD_FREED_MS = 10_000

describeWithPostgres('a recipient whose admission outlasts its bound', () => {
  let sql: Sql
  let a: MachineProcess

  beforeAll(async () => {
    const url = await migratedDatabase()
    sql = openPostgres(url, { max: 3 })
    a = pgMachine('a', url, { DATABASE_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS), LOG_LEVEL: 'info' })
    await a.start({ PG_MACHINE_TENANTS: 'local:1' })
  })
  afterAll(async () => {
    await a?.remove()
    await sql?.end()
  })

  /** Holds an exclusive lock on `table` in a transaction of its own until the returned function is called. */
  async function lockTable(table: string): Promise<() => Promise<void>> {
    let unlock!: () => void
    const unlocked = new Promise<void>((resolve) => (unlock = resolve))
    let locked!: () => void
    const taken = new Promise<void>((resolve) => (locked = resolve))
    const done = sql.begin(async (tx) => {
      await tx.unsafe(`lock table ${table} in access exclusive mode`)
      locked()
      await unlocked
    })
    await taken
    return async () => {
      unlock()
      await done
    }
  }

  test(`RCPT TO answers 451 at the statement timeout plus ${ADMISSION_MARGIN_MS} ms; the unit held after it is given back at once`, async () => {
    const key = a.tenants[0]!.keys[0]!
    const created = await machineApi(a, 'POST', '/v1/inboxes', key)
    expect(created.status).toBe(201)
    const inbox: { id: string; address: string } = created.body.data
    const receivedBefore = (await machineApi(a, 'GET', '/v1/usage', key)).body.emails.received
    const reservations = async () => Number((await sql`select count(*)::int as n from quota_reservations`)[0]!.n)
    expect(await reservations()).toBe(0)

    const client = await SmtpClient.connect(a.smtp)
    expect((await client.command('EHLO deadline.test')).code).toBe(250)
    expect((await client.command('MAIL FROM:<sender@example.com>')).code).toBe(250)
    const freeLookup = await lockTable('inboxes')
    const freeHold = await lockTable('quota_reservations')
    const began = performance.now()
    const rcpt = timed(() => client.command(`RCPT TO:<${inbox.address}>`))
    const freeing = (async () => {
      await Bun.sleep(LOOKUP_FREED_MS) // part of the scenario: the lookup waits this long
      await freeLookup()
      await Bun.sleep(HOLD_FREED_MS - (performance.now() - began)) // and the hold until after the bound
      await freeHold()
    })()
    const answered = await rcpt
    expect(answered.value.code, JSON.stringify(answered.value)).toBe(451)
    expect(answered.value.text).toContain('Temporary failure storing the message, try again later')
    expect(answered.ms).toBeGreaterThanOrEqual(BOUND_MS - 100)
    // Before, the hold's answer at HOLD_FREED_MS was awaited (and accepted the recipient).
    expect(answered.ms).toBeLessThan(HOLD_FREED_MS - 500)
    await freeing

    // The hold landed after the 451: its unit is given back while the session is still open
    // (before, it stayed until the session ended, counting against the organisation). Freed
    // from the lock, the hold still has to insert and commit, and the release to follow: no
    // unit, and no other statement of the database under way (a count of 0 read before the
    // hold's insert proves nothing).
    const busy = async () =>
      Number(
        (
          await sql`select count(*)::int as n from pg_stat_activity
            where datname = current_database() and pid <> pg_backend_pid() and state <> 'idle'`
        )[0]!.n,
      )
    await until(async () => (await busy()) === 0 && (await reservations()) === 0, 'the late unit to be given back', {
      timeoutMs: 5_000,
      intervalMs: 50,
    })
    // The same session goes on: the recipient again, accepted now, and the message stored once.
    expect((await client.command(`RCPT TO:<${inbox.address}>`)).code).toBe(250)
    expect(await reservations()).toBe(1)
    expect((await client.data(simpleMessage({ to: inbox.address, subject: 'after the late hold' }))).code).toBe(250)
    await client.command('QUIT')
    client.destroy()
    expect((await machineApi(a, 'GET', '/v1/usage', key)).body.emails.received).toBe(receivedBefore + 1)
    const listed = await machineApi(a, 'GET', `/v1/inboxes/${inbox.id}/messages`, key)
    expect(listed.body.data.map((message: { subject: string }) => message.subject)).toEqual(['after the late hold'])
    await until(async () => (await reservations()) === 0, 'the delivered unit to become usage')
    expectDocumentedEvents(a.output(), 'a')
    console.info(
      `RCPT 451 after ${Math.round(answered.ms)} ms (bound ${BOUND_MS} ms; the hold answered at ${HOLD_FREED_MS} ms)`,
    )
  })
})
