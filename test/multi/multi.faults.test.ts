/**
 * PostgreSQL mode while the database is away: a machine reaches its database through a relay
 * that the test cuts (every connection closed, new ones refused) and restores. /ready fails
 * while the database does not answer and passes again without a restart; the failing state
 * is logged once when it begins and once when it ends; waiters are woken to re-query after
 * LISTEN comes back; the client's errors are classified as storage unavailable (503
 * `storage_unavailable` on the API, 451 on SMTP), in PostgreSQL mode only.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { sql as drizzleSql } from 'drizzle-orm'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { type RunningApp, startApp } from '../../src/app.ts'
import { loadConfig } from '../../src/config.ts'
import { createApiKey } from '../../src/core/api-keys/keys.ts'
import { CLI_ACTOR } from '../../src/core/audit/audit.ts'
import { createOrganization } from '../../src/core/organizations/organizations.ts'
import { postgresFailureKind, StorageHealth } from '../../src/core/runtime/storage-health.ts'
import { toErrorResponse } from '../../src/http/errors.ts'
import { createLogger } from '../../src/log.ts'
import type { InboxEvent } from '../../src/notifier.ts'
import { openPostgres } from '../../src/storage/postgres/client.ts'
import { postgresDb } from '../../src/storage/postgres/db.ts'
import { describeWithPostgres, migratedDatabase } from '../support/postgres.ts'
import { scratchDir } from '../support/scratch.ts'
import { type TcpCut, tcpCut } from '../support/tcp-cut.ts'
import { layDownSelfSigned } from '../support/tls-seed.ts'
import { until } from '../support/wait.ts'

setDefaultTimeout(60_000)

const quiet = createLogger('error', () => {})

describe('classifying PostgreSQL failures', () => {
  test("an unreachable, restarting or shutting-down server is 'unreachable'; other database errors are not storage states", () => {
    for (const code of [
      'ECONNREFUSED',
      'ECONNRESET',
      'CONNECTION_CLOSED',
      'CONNECTION_ENDED',
      'CONNECTION_DESTROYED',
      'CONNECTION_SILENT',
      'CONNECT_TIMEOUT',
      '57P01',
      '57P02',
      '57P03',
      '08006',
      '08001',
      '08P01',
    ]) {
      expect(postgresFailureKind({ code })).toBe('unreachable')
    }
    expect(postgresFailureKind({ code: '53300' })).toBe('busy')
    // A statement past the pool's statement_timeout: the database too slow to answer now.
    expect(postgresFailureKind({ code: '57014' })).toBe('busy')
    expect(postgresFailureKind({ code: '53100' })).toBe('full')
    expect(postgresFailureKind({ code: '25006' })).toBe('read_only')
    for (const code of ['23505', '42P01', '40001', 'SQLITE_CONSTRAINT', undefined])
      expect(postgresFailureKind({ code })).toBeNull()
  })

  test("in PostgreSQL mode the API answers 503 storage_unavailable where SQLite's does; in SQLite mode a reset socket stays a 500", () => {
    const terminated = Object.assign(new Error('terminating connection due to administrator command'), {
      code: '57P01',
    })
    const inPostgres = toErrorResponse(
      terminated,
      undefined,
      quiet,
      'req_1',
      new StorageHealth(quiet, () => {}, 'postgres'),
    )
    expect(inPostgres).toMatchObject({ status: 503, code: 'storage_unavailable', headers: { 'Retry-After': '5' } })
    // Operations whose statuses list no 503 keep their 500, with the same retry hint, as in SQLite mode.
    expect(
      toErrorResponse(terminated, undefined, quiet, 'req_2', new StorageHealth(quiet, () => {}, 'postgres'), false),
    ).toMatchObject({ status: 500, code: 'internal_error' })
    const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })
    expect(
      toErrorResponse(reset, undefined, quiet, 'req_3', new StorageHealth(quiet, () => {}, 'sqlite')),
    ).toMatchObject({ status: 500, code: 'internal_error' })
  })

  test("a failure that reaches us wrapped by the ORM is classified by its cause, and logged with the driver's code", async () => {
    const nobody = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
    const port = nobody.port
    nobody.stop(true)
    const sql = openPostgres(`postgres://nobody@127.0.0.1:${port}/none`, { max: 1 })
    try {
      // Every statement through Drizzle arrives as its "Failed query" error with the driver's as `cause`.
      const error = await postgresDb(sql)
        .execute(drizzleSql`select 1`)
        .then(
          () => null,
          (e: unknown) => e,
        )
      expect((error as { code?: unknown }).code).toBeUndefined()
      expect((error as { cause?: { code?: unknown } }).cause?.code).toBe('ECONNREFUSED')
      const logged: Record<string, unknown>[] = []
      const health = new StorageHealth(
        createLogger('debug', (line) => logged.push(JSON.parse(line))),
        () => {},
        'postgres',
      )
      expect(health.kindOf(error)).toBe('unreachable')
      expect(health.failing).toBeNull() // kindOf records nothing
      expect(health.failed(error)).toBe('unreachable')
      expect(logged).toEqual([
        expect.objectContaining({ event: 'storage_failing', kind: 'unreachable', postgres_code: 'ECONNREFUSED' }),
      ])
      // A chain that loops ends the search instead of the process.
      const looped: { cause?: unknown } = {}
      looped.cause = looped
      expect(health.kindOf(looped)).toBeNull()
    } finally {
      await sql.end({ timeout: 1 })
    }
  })

  test("the client's own error for a server nobody listens on is classified", async () => {
    const nobody = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
    const port = nobody.port
    nobody.stop(true)
    const sql = openPostgres(`postgres://nobody@127.0.0.1:${port}/none`, { max: 1 })
    try {
      const error = await sql`select 1`.then(
        () => null,
        (e: unknown) => e,
      )
      expect(postgresFailureKind(error)).toBe('unreachable')
    } finally {
      await sql.end({ timeout: 1 })
    }
  })
})

describeWithPostgres('a machine whose database goes away and comes back', () => {
  let relay: TcpCut
  let app: RunningApp
  let dir: string
  const logs: Record<string, any>[] = []

  beforeAll(async () => {
    const direct = new URL(await migratedDatabase())
    relay = tcpCut(direct.hostname, Number(direct.port))
    const relayed = new URL(direct)
    relayed.hostname = '127.0.0.1'
    relayed.port = String(relay.port)
    dir = scratchDir('pigeonhole-faults-')
    const databasePath = join(dir, 'pigeonhole.db')
    const config = loadConfig({
      PORT: '0',
      SMTP_PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_PATH: databasePath,
      DATABASE_URL: relayed.href,
      DATABASE_POOL_SIZE: '2',
      RECEIVING_DOMAIN: 'inbox.test',
    })
    await layDownSelfSigned(databasePath, config.receivingDomain)
    app = await startApp({ config, logger: createLogger('debug', (line) => logs.push(JSON.parse(line))) })
  })
  afterAll(async () => {
    relay?.restore()
    await app?.stop()
    relay?.stop()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  const ready = async () => {
    const response = await fetch(`${app.httpUrl}/ready`)
    return {
      status: response.status,
      database: ((await response.json()) as { checks: { database: string } }).checks.database,
    }
  }

  test('/ready fails while the database is cut off and passes again once it is back, without a restart; waiters re-query after LISTEN returns', async () => {
    const heard: InboxEvent[] = []
    const unsubscribe = app.services.notifier.subscribe('inb_during_outage', (event) => heard.push(event))
    await app.services.notifier.ready()
    expect(await ready()).toEqual({ status: 200, database: 'ok' })

    relay.cut()
    expect(await ready()).toEqual({ status: 503, database: 'failed' })
    expect(app.services.storageHealth.failing).toBe('unreachable')
    expect(await ready()).toEqual({ status: 503, database: 'failed' })
    // Logged once when the state began, however many probes failed.
    expect(logs.filter((line) => line.event === 'storage_failing')).toEqual([
      expect.objectContaining({ kind: 'unreachable' }),
    ])

    relay.restore()
    // The probe's own timer notices the recovery; no request is needed for it.
    await until(() => logs.some((line) => line.event === 'storage_recovered'), 'the recovery to be logged', {
      timeoutMs: 20_000,
    })
    expect(app.services.storageHealth.failing).toBeNull()
    expect(await ready()).toEqual({ status: 200, database: 'ok' })
    // A NOTIFY sent while LISTEN was down is lost: every waiter is told to look again.
    await until(() => heard.length > 0, 'the waiter to be woken after LISTEN returns', { timeoutMs: 20_000 })
    expect(heard).toEqual(['message_stored'])
    expect(logs.some((line) => line.event === 'wake_bus_reconnected')).toBe(true)
    unsubscribe()
  })
  test('a long poll whose query meets the database going away waits out its time: answered at its deadline, not before', async () => {
    const org = await createOrganization(app.services, CLI_ACTOR, { name: 'riding out', preset: 'local' })
    const { key } = await createApiKey(app.services, CLI_ACTOR, { organizationId: org.id })
    const created = await fetch(`${app.httpUrl}/v1/inboxes`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
    })
    expect(created.status).toBe(201)
    const inboxId = ((await created.json()) as { data: { id: string } }).data.id
    const began = performance.now()
    const poll = fetch(`${app.httpUrl}/v1/inboxes/${inboxId}/messages?wait_seconds=3`, {
      headers: { authorization: `Bearer ${key}` },
    })
    // Cut the moment the poll holds its slot: its first query, right after, meets the cut.
    // (Should the query win the race, the poll is parked and answers at its deadline anyway.)
    await until(() => app.services.longPolls.total() === 1, 'the poll to take its slot', { intervalMs: 1 })
    relay.cut()
    try {
      const answer = await poll
      const waited = performance.now() - began
      // It used to answer this 500 at once, its query having failed: a blip of the database
      // cut short a wait the client had asked for.
      expect(waited).toBeGreaterThanOrEqual(3_000 - 50)
      expect(answer.status).toBe(500)
      expect(answer.headers.get('retry-after')).toBe('5')
      expect(((await answer.json()) as { error: { code: string } }).error.code).toBe('internal_error')
    } finally {
      relay.restore()
    }
    await until(async () => (await ready()).status === 200, 'the database to be back', {
      timeoutMs: 20_000,
      intervalMs: 100,
    })
  })

  test('a machine stops while its database is away: the stop ends, the leases are left to run out', async () => {
    relay.cut()
    const began = performance.now()
    await app.stop()
    // A deadline for a hang only: closing gives the database a few seconds, then ends the pool.
    expect(performance.now() - began).toBeLessThan(30_000)
    expect(logs.some((line) => line.event === 'stopped')).toBe(true)
    relay.restore()
  })
})
