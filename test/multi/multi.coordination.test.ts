/**
 * Two machines in PostgreSQL mode: two full assemblies (startApp) on one database, as two
 * Fly machines would run. What one process kept in memory is shared: a wake-up sent from
 * either machine reaches the listeners of both, requests per minute and concurrent long
 * polls are counted across both, a cursor signed on one is read on the other, a stopped
 * machine's leases stop counting at once. The verbs that serve HTTP and SMTP wait for the
 * storage port's PostgreSQL areas; these tests drive the coordination parts through the
 * assembled services.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { type RunningApp, startApp } from '../../src/app.ts'
import { ManualClock } from '../../src/clock.ts'
import { loadConfig } from '../../src/config.ts'
import type { Principal } from '../../src/core/api-keys/authenticate.ts'
import { DomainError } from '../../src/core/common/errors.ts'
import { LOCAL_TESTING_LIMITS } from '../../src/core/limits/organization-limits.ts'
import { createLogger } from '../../src/log.ts'
import type { InboxEvent } from '../../src/notifier.ts'
import { openPostgres, type Sql } from '../../src/storage/postgres/client.ts'
import { publishStored } from '../../src/storage/postgres/wake-bus.ts'
import { describeWithPostgres, migratedDatabase } from '../support/postgres.ts'
import { scratchDir } from '../support/scratch.ts'
import { layDownSelfSigned } from '../support/tls-seed.ts'
import { until } from '../support/wait.ts'

setDefaultTimeout(60_000)

interface Machine {
  app: RunningApp
  logs: Record<string, any>[]
  dir: string
}

async function startMachine(url: string, clock: ManualClock): Promise<Machine> {
  const dir = scratchDir('pigeonhole-multi-')
  const databasePath = join(dir, 'pigeonhole.db')
  const config = loadConfig({
    PORT: '0',
    SMTP_PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_PATH: databasePath,
    DATABASE_URL: url,
    DATABASE_POOL_SIZE: '4',
    RECEIVING_DOMAIN: 'inbox.test',
  })
  const logs: Record<string, any>[] = []
  await layDownSelfSigned(databasePath, config.receivingDomain)
  const app = await startApp({ config, clock, logger: createLogger('debug', (line) => logs.push(JSON.parse(line))) })
  return { app, logs, dir }
}

const principal = (keyPublicId: string, limits: Partial<Principal['limits']> = {}): Principal => ({
  organizationId: 'org_multi',
  keyPublicId,
  limits: { ...LOCAL_TESTING_LIMITS, ...limits },
})

/** The error a call throws, or null. */
async function thrown(work: () => unknown): Promise<unknown> {
  try {
    await work()
    return null
  } catch (error) {
    return error
  }
}

describeWithPostgres('two machines on one PostgreSQL database', () => {
  const clock = new ManualClock('2026-03-10T09:15:20.000Z')
  let url: string
  let a: Machine
  let b: Machine
  let sql: Sql

  beforeAll(async () => {
    url = await migratedDatabase()
    ;[a, b] = await Promise.all([startMachine(url, clock), startMachine(url, clock)])
    sql = openPostgres(url, { max: 2 })
  })
  afterAll(async () => {
    await Promise.all([a?.app.stop(), b?.app.stop()])
    await sql?.end()
    for (const machine of [a, b]) if (machine) rmSync(machine.dir, { recursive: true, force: true })
  })

  test('a wake-up stored from anywhere reaches the listeners of both machines, once each', async () => {
    const inboxId = 'inb_wake_everywhere'
    const heard: Record<string, InboxEvent[]> = { a: [], b: [] }
    const stopA = a.app.services.notifier.subscribe(inboxId, (event) => heard.a!.push(event))
    const stopB = b.app.services.notifier.subscribe(inboxId, (event) => heard.b!.push(event))
    await Promise.all([a.app.services.notifier.ready(), b.app.services.notifier.ready()])
    try {
      // What core does after B's storing transaction commits: the version moves at once, and
      // B publishes the inbox in its next NOTIFY, which every machine hears, B included.
      const before = b.app.services.notifier.version(inboxId)
      b.app.services.notifier.emit(inboxId, 'message_stored')
      expect(b.app.services.notifier.version(inboxId)).toBe(before + 1)
      await until(() => heard.a!.length === 1 && heard.b!.length === 1, 'both machines to hear the publication')
      // Proves that nothing more happens: no listener hears one message twice.
      await Bun.sleep(200)
      expect(heard).toEqual({ a: ['message_stored'], b: ['message_stored'] })
      // A publication from anywhere (here the test's own session) reaches both machines too.
      await publishStored(sql, [inboxId])
      await until(() => heard.a!.length === 2 && heard.b!.length === 2, 'both machines to hear the second publication')
    } finally {
      stopA()
      stopB()
    }
  })

  test("a machine's own stored message reaches its early listeners (long polls) at once, before the NOTIFY; the others only through it", async () => {
    const inboxId = 'inb_wake_early'
    const heard: Record<string, InboxEvent[]> = { early: [], plain: [], elsewhere: [] }
    const stops = [
      b.app.services.notifier.subscribe(inboxId, (event) => heard.early!.push(event), { early: true }),
      b.app.services.notifier.subscribe(inboxId, (event) => heard.plain!.push(event)),
      a.app.services.notifier.subscribe(inboxId, (event) => heard.elsewhere!.push(event), { early: true }),
    ]
    await Promise.all([a.app.services.notifier.ready(), b.app.services.notifier.ready()])
    try {
      // What core does after B's storing transaction commits: only B's early listener hears it
      // in the same step; the publication is on its way through the database.
      b.app.services.notifier.emit(inboxId, 'message_stored')
      expect(heard).toEqual({ early: ['message_stored'], plain: [], elsewhere: [] })
      // The publication then reaches everyone, the early listener a second time.
      await until(
        () => heard.plain!.length === 1 && heard.elsewhere!.length === 1 && heard.early!.length === 2,
        'every listener to hear the NOTIFY',
      )
      expect(heard).toEqual({
        early: ['message_stored', 'message_stored'],
        plain: ['message_stored'],
        elsewhere: ['message_stored'],
      })
    } finally {
      for (const stop of stops) stop()
    }
  })

  test("an inbox deleted on one machine ends the other machine's waits on it", async () => {
    const inboxId = 'inb_deleted_elsewhere'
    const heard: InboxEvent[] = []
    const stop = a.app.services.notifier.subscribe(inboxId, (event) => heard.push(event))
    try {
      b.app.services.notifier.emit(inboxId, 'inbox_deleted')
      await until(() => heard.length > 0, 'machine A to hear the deletion')
      expect(heard).toEqual(['inbox_deleted'])
    } finally {
      stop()
    }
  })

  test('requests per minute are counted across machines: the limit holds, the next minute starts afresh', async () => {
    const who = principal('key_rate', { requestsPerKey: 3, requestsPerOrg: 100 })
    await a.app.services.requestLimiter.admit(who)
    await b.app.services.requestLimiter.admit(who)
    await a.app.services.requestLimiter.admit(who)
    for (const machine of [a, b]) {
      const error = await thrown(() => machine.app.services.requestLimiter.admit(who))
      expect(error).toBeInstanceOf(DomainError)
      expect((error as DomainError).code).toBe('rate_limit_exceeded')
      expect((error as DomainError).message).toBe(
        'Rate limit of 3 requests per minute for this key exceeded; retry at the next UTC minute.',
      )
      // 09:15:20 → the next UTC minute begins in 40 s.
      expect((error as DomainError).facts.retryAfterSeconds).toBe(40)
    }
    clock.advance(40_000)
    await b.app.services.requestLimiter.admit(who)
  })

  test('the organisation limit counts every key of the organisation on every machine, and names the organisation', async () => {
    const limits = { requestsPerKey: 100, requestsPerOrg: 2 }
    const first = { ...principal('key_org_1', limits), organizationId: 'org_counted' }
    const second = { ...principal('key_org_2', limits), organizationId: 'org_counted' }
    await a.app.services.requestLimiter.admit(first)
    await b.app.services.requestLimiter.admit(second)
    const error = await thrown(() => a.app.services.requestLimiter.admit(second))
    expect((error as DomainError).message).toBe(
      'Rate limit of 2 requests per minute for this organization exceeded; retry at the next UTC minute.',
    )
  })

  test('concurrent long polls are counted across machines; each machine counts only its own for its metrics', async () => {
    const who = principal('key_slots', { longPollsPerKey: 2, longPollsPerOrg: 30 })
    const releaseA = await a.app.services.longPolls.acquire(who)
    const releaseB = await b.app.services.longPolls.acquire(who)
    const error = await thrown(() => a.app.services.longPolls.acquire(who))
    expect((error as DomainError).code).toBe('long_poll_limit_exceeded')
    expect((error as DomainError).message).toBe('Too many concurrent waits: at most 2 per key and 30 per organization.')
    expect(a.app.services.longPolls.count(who)).toEqual({ key: 1, org: 1 })
    expect(a.app.services.longPolls.total()).toBe(1)
    releaseB()
    releaseB() // twice is harmless
    expect(b.app.services.longPolls.total()).toBe(0)
    // The release reaches the database without being awaited: the slot comes back shortly.
    let again: (() => void) | null = null
    await until(async () => {
      again = await Promise.resolve(a.app.services.longPolls.acquire(who)).catch(() => null)
      return again !== null
    }, "B's released slot to be taken on A")
    releaseA()
    again!()
  })

  test('a cursor signed on one machine is read on the other', () => {
    const position = { at: '2026-03-10T09:15:20.000Z', id: 'msg_0123456789abcdef0123456789abcdef' }
    const cursor = a.app.services.cursors.encode('inb_x', position)
    expect(b.app.services.cursors.decode('inb_x', cursor)).toEqual(position)
  })

  test('the message page cache never hits: another machine may have committed since', () => {
    const cache = a.app.services.messagePages
    cache.set('k', { version: 0, builtAt: clock.now(), validUntil: clock.now() + 60_000, body: '{"data":[]}' })
    expect(cache.get('k', 0, clock.now())).toBeUndefined()
    expect(cache.size).toBe(0)
  })

  test('/ready checks the database with a write and the clock against it; there is no SQLite file or server lock', async () => {
    const response = await fetch(`${a.app.httpUrl}/ready`)
    expect(response.status).toBe(200)
    expect(((await response.json()) as { checks: Record<string, string> }).checks).toEqual({
      database: 'ok',
      smtp: 'ok',
      litestream: 'not_configured',
      replication: 'not_configured',
      proxy_lines: 'not_configured',
      clock: 'ok',
    })
    expect(await Bun.file(a.app.services.config.databasePath).exists()).toBe(false)
    // The metrics render without a SQLite file; an unreachable database has its own failure series.
    expect(a.app.metrics.render()).toContain('pigeonhole_storage_failures_total{kind="unreachable"} 0')
  })

  test("a machine that stops gives its leases back at once; the other's stay", async () => {
    const who = principal('key_stop', { longPollsPerKey: 5, longPollsPerOrg: 30 })
    const third = await startMachine(url, clock)
    let stopped = false
    try {
      await third.app.services.longPolls.acquire(who)
      await third.app.services.longPolls.acquire(who)
      const releaseA = await a.app.services.longPolls.acquire(who)
      const held = async () =>
        (
          await sql<
            { n: number }[]
          >`select count(*)::int as n from slot_leases where subject_id = ${`key:${who.keyPublicId}`}`
        )[0]!.n
      expect(await held()).toBe(3)
      await third.app.stop()
      stopped = true
      expect(await held()).toBe(1)
      releaseA()
    } finally {
      if (!stopped) await third.app.stop()
      rmSync(third.dir, { recursive: true, force: true })
    }
  })
})
