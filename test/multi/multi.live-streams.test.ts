/**
 * The console's live-stream bounds across two machines in PostgreSQL mode: a person's tabs
 * land on either machine, and the bounds (MAX_STREAMS_PER_USER per person,
 * MAX_STREAMS_PER_ORGANIZATION per organisation) count them together, through each machine's
 * slot leases in the database. A stream that ends frees its slot for the other machine; a
 * machine that dies holds its streams' slots only until its lease runs out.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { type RunningApp, startApp } from '../../src/app.ts'
import { ManualClock } from '../../src/clock.ts'
import { loadConfig } from '../../src/config.ts'
import { LiveStreams, MAX_STREAMS_PER_ORGANIZATION, MAX_STREAMS_PER_USER } from '../../src/console/live-streams.ts'
import type { Services } from '../../src/core/common/services.ts'
import { createLogger } from '../../src/log.ts'
import { openPostgres, type Sql } from '../../src/storage/postgres/client.ts'
import { createLiveStreamLeases } from '../../src/storage/postgres/live-stream-leases.ts'
import { describeWithPostgres, migratedDatabase } from '../support/postgres.ts'
import { scratchDir } from '../support/scratch.ts'
import { layDownSelfSigned } from '../support/tls-seed.ts'
import { until } from '../support/wait.ts'

setDefaultTimeout(60_000)

const bounds = { perUser: MAX_STREAMS_PER_USER, perOrganization: MAX_STREAMS_PER_ORGANIZATION }

interface Machine {
  app: RunningApp
  dir: string
  /** This machine's streams, counted in the database as its assembly's console counts them. */
  streams: LiveStreams
}

async function startMachine(url: string, clock: ManualClock, sql: Sql, holder: string): Promise<Machine> {
  const dir = scratchDir('pigeonhole-streams-')
  const databasePath = join(dir, 'pigeonhole.db')
  const config = loadConfig({
    PORT: '0',
    SMTP_PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_PATH: databasePath,
    DATABASE_URL: url,
    DATABASE_POOL_SIZE: '2',
    RECEIVING_DOMAIN: 'inbox.test',
  })
  await layDownSelfSigned(databasePath, config.receivingDomain)
  const app = await startApp({ config, clock, logger: createLogger('error', () => {}) })
  return { app, dir, streams: new LiveStreams(createLiveStreamLeases(sql, { holder, clock, bounds })) }
}

describeWithPostgres('console live-stream bounds across two machines', () => {
  const clock = new ManualClock('2026-03-10T09:15:20.000Z')
  let url: string
  let a: Machine
  let b: Machine
  let sql: Sql
  const tabs: AbortController[] = []

  beforeAll(async () => {
    url = await migratedDatabase()
    sql = openPostgres(url, { max: 4 })
    ;[a, b] = await Promise.all([
      startMachine(url, clock, sql, 'machine-a'),
      startMachine(url, clock, sql, 'machine-b'),
    ])
  })
  afterAll(async () => {
    for (const tab of tabs) tab.abort()
    await Promise.all([a?.app.stop(), b?.app.stop()])
    await sql?.end()
    for (const machine of [a, b]) if (machine) rmSync(machine.dir, { recursive: true, force: true })
  })

  /** Opens a tab's stream on `machine`; resolves to its tab (abort it to leave) or rejects with the refusal. */
  async function openTab(machine: Machine, userId: string, organizationId: string): Promise<AbortController> {
    const tab = new AbortController()
    tabs.push(tab)
    const s: Services = machine.app.services
    await machine.streams.stream(s, tab.signal, { userId, organizationId, stillAllowed: () => true }, 'inb_streams')
    return tab
  }

  const refusal = (work: Promise<unknown>) =>
    work.then(
      () => null,
      (error: Error) => error.message,
    )

  test(`a person's ${MAX_STREAMS_PER_USER} streams are counted across A and B; the next is refused on either, and a tab closed on B frees a slot for A`, async () => {
    const opened: AbortController[] = []
    for (let i = 0; i < MAX_STREAMS_PER_USER; i++) opened.push(await openTab(i % 2 === 0 ? a : b, 'usr_one', 'org_one'))
    expect(await refusal(openTab(a, 'usr_one', 'org_one'))).toContain(
      `At most ${MAX_STREAMS_PER_USER} live inbox pages per person`,
    )
    expect(await refusal(openTab(b, 'usr_one', 'org_one'))).toContain('per person')

    opened[1]!.abort() // a tab on B
    await until(
      async () => (await refusal(openTab(a, 'usr_one', 'org_one'))) === null,
      'the slot freed on B to be taken on A',
    )
    expect(await refusal(openTab(b, 'usr_one', 'org_one'))).toContain('per person')
  })

  test(`an organisation's ${MAX_STREAMS_PER_ORGANIZATION} streams are counted across A and B, whoever opens them`, async () => {
    const people = MAX_STREAMS_PER_ORGANIZATION / MAX_STREAMS_PER_USER
    for (let person = 0; person < people; person++) {
      for (let i = 0; i < MAX_STREAMS_PER_USER; i++) await openTab(i % 2 === 0 ? a : b, `usr_org_${person}`, 'org_two')
    }
    expect(await refusal(openTab(b, 'usr_new', 'org_two'))).toContain(
      `At most ${MAX_STREAMS_PER_ORGANIZATION} live inbox pages per organisation`,
    )
    expect(await refusal(openTab(a, 'usr_new', 'org_other'))).toBeNull()
  })

  test("a dead machine's streams hold their slots only until its lease runs out", async () => {
    // A machine that opened a person's streams and then died: nothing renews or releases them.
    const dead = new LiveStreams(
      createLiveStreamLeases(sql, { holder: 'machine-dead', clock, bounds, leaseMs: 30_000 }),
    )
    for (let i = 0; i < MAX_STREAMS_PER_USER; i++) {
      await dead.stream(
        a.app.services,
        new AbortController().signal,
        { userId: 'usr_three', organizationId: 'org_three', stillAllowed: () => true },
        'inb_dead',
      )
    }
    expect(await refusal(openTab(b, 'usr_three', 'org_three'))).toContain('per person')
    clock.advance(30_000)
    expect(await refusal(openTab(b, 'usr_three', 'org_three'))).toBeNull()
  })
})
