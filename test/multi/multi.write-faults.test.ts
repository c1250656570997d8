/**
 * A database that answers but cannot take mail, on two real server processes over one
 * PostgreSQL: someone holds a lock on `messages`. Every message then gets 451, so /ready must
 * fail too (its probe is a bounded real write that takes mail's locks, not a `select 1`),
 * naming the failing part, and the log must say so once when it begins and once when mail
 * can be stored again, not "recovered" at the first unrelated success.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { openPostgres, type Sql } from '../../src/storage/postgres/client.ts'
import { type MachineProcess, machineApi, pgMachine } from '../support/pg-processes.ts'
import { expectDocumentedEvents } from '../support/log-events.ts'
import { describeWithPostgres, migratedDatabase } from '../support/postgres.ts'
import { sendMail, simpleMessage } from '../support/smtp.ts'
import { until } from '../support/wait.ts'

setDefaultTimeout(90_000)

/** How long the lock is held: several probes and refused messages fall inside it. */
const LOCK_MS = 9_000

const events = (machine: MachineProcess, name: string) =>
  machine
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{"time"'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.event === name)

describeWithPostgres('two server processes whose database holds a lock on messages', () => {
  let sql: Sql
  let a: MachineProcess
  let b: MachineProcess

  beforeAll(async () => {
    const url = await migratedDatabase()
    sql = openPostgres(url, { max: 2 })
    // A short statement timeout, so a message waiting on the lock is refused within the test.
    const env = { DATABASE_STATEMENT_TIMEOUT_MS: '2000' }
    a = pgMachine('a', url, env)
    b = pgMachine('b', url, env)
    await a.start({ PG_MACHINE_TENANTS: 'local:1' })
    await b.start()
  })
  afterAll(async () => {
    await Promise.all([a?.remove(), b?.remove()])
    await sql?.end()
  })

  test('/ready fails and names the lock while mail gets 451; one storage_failing and one storage_recovered per machine', async () => {
    const key = a.tenants[0]!.keys[0]!
    const created = await machineApi(a, 'POST', '/v1/inboxes', key)
    expect(created.status).toBe(201)
    const { address } = created.body.data as { address: string }
    const send = (machine: MachineProcess, subject: string) =>
      sendMail(machine.smtp, { to: [address] }, simpleMessage({ to: address, subject }))
    for (const machine of [a, b]) expect((await send(machine, `before-${machine.name}`)).data?.code).toBe(250)

    let unlock!: () => void
    const unlocked = new Promise<void>((resolve) => (unlock = resolve))
    let locked!: () => void
    const lockTaken = new Promise<void>((resolve) => (locked = resolve))
    const holding = sql.begin(async (tx) => {
      await tx`lock table messages in access exclusive mode`
      locked()
      await unlocked
    })
    await lockTaken
    const lockedAt = performance.now()

    const samples: number[] = []
    try {
      // Mail is refused on both machines ...
      for (const machine of [a, b]) {
        const sent = await send(machine, `locked-${machine.name}`)
        expect(sent.data?.code, JSON.stringify(sent)).toBe(451)
      }
      // ... and /ready says so on both, naming the lock, for as long as it is held.
      while (performance.now() - lockedAt < LOCK_MS) {
        for (const machine of [a, b]) {
          const ready = await machineApi(machine, 'GET', '/ready')
          samples.push(ready.status)
          expect(ready.status, `${machine.name}: ${ready.text}`).toBe(503)
          expect(ready.body.checks.database).toBe('failed')
          expect(ready.body.failing.database).toContain('lock on messages')
        }
        await Bun.sleep(500)
      }
      // Nothing recovered while mail could not be stored.
      for (const machine of [a, b]) expect(events(machine, 'storage_recovered'), machine.name).toEqual([])
    } finally {
      unlock()
      await holding
    }

    const releasedAt = performance.now()
    await until(
      async () => (await Promise.all([a, b].map((m) => machineApi(m, 'GET', '/ready')))).every((r) => r.status === 200),
      'both machines to be ready again',
      {
        timeoutMs: 5_000,
        intervalMs: 100,
      },
    )
    const readyAfterMs = Math.round(performance.now() - releasedAt)
    for (const machine of [a, b]) expect((await send(machine, `after-${machine.name}`)).data?.code).toBe(250)
    await until(
      () => [a, b].every((m) => events(m, 'storage_recovered').length === 1),
      'one storage_recovered per machine',
      { timeoutMs: 10_000, intervalMs: 100 },
    )
    for (const machine of [a, b]) {
      expect(events(machine, 'storage_failing').length, machine.name).toBe(1)
      expect(events(machine, 'storage_recovered').length, machine.name).toBe(1)
      expect(events(machine, 'storage_failing')[0]!.kind).toBe('busy')
      expectDocumentedEvents(machine.output(), machine.name)
    }
    console.info(
      `${samples.length} /ready samples during the lock, all 503; ready again ${readyAfterMs} ms after its release`,
    )
  })
})
