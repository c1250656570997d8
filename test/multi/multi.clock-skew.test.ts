/**
 * Limits stay exact whatever the machines' clocks say: two real server processes over one
 * PostgreSQL, machine A's clock 40 s behind (Debian's libfaketime), machine B's 40 s ahead.
 * Before, B treated A's long-poll leases as expired and let in twice the key's limit, and
 * the two machines counted alternating requests in different minutes. Leases and request
 * minutes now run on each machine's clock corrected by its measured offset to the
 * database's; the offset is a metric, logged once, and past the tolerance /ready fails.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { existsSync, readdirSync, rmSync } from 'node:fs'
import { openPostgres, type Sql } from '../../src/storage/postgres/client.ts'
import { expectDocumentedEvents } from '../support/log-events.ts'
import { longPollsWaiting, type MachineProcess, machineApi, pgMachine } from '../support/pg-processes.ts'
import { describeWithPostgres, migratedDatabase } from '../support/postgres.ts'
import { until } from '../support/wait.ts'

setDefaultTimeout(90_000)

const LIBFAKETIME = [
  '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1',
  '/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1',
].find((path) => existsSync(path))
const METRICS_TOKEN = 'multi-clock-skew-metrics-token'
const LONG_POLLS = 4
const REQUESTS = 10

const skewed = (offset: string) => ({ LD_PRELOAD: LIBFAKETIME!, FAKETIME: offset, METRICS_TOKEN })

/**
 * libfaketime leaves a shared-memory segment and a semaphore in /dev/shm per process it was
 * loaded into (faketime_shm_<pid>, sem.faketime_sem_<pid>), and nothing removes them when the
 * process ends. Those of processes that are gone are removed here; a live one's are its own.
 */
function removeDeadFaketimeSegments(): void {
  if (!existsSync('/dev/shm')) return
  for (const name of readdirSync('/dev/shm')) {
    const pid = /^(?:faketime_shm_|sem\.faketime_sem_)(\d+)$/.exec(name)?.[1]
    if (pid && !existsSync(`/proc/${pid}`)) rmSync(`/dev/shm/${name}`, { force: true })
  }
}

async function metric(machine: MachineProcess, name: string): Promise<number> {
  const text = await (
    await fetch(`${machine.httpUrl}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
  ).text()
  return Number(
    text
      .split('\n')
      .find((line) => line.startsWith(`${name} `))
      ?.split(' ')[1] ?? Number.NaN,
  )
}

const body = () => {
  let sql: Sql
  let a: MachineProcess
  let b: MachineProcess
  let key: string
  /** A key of its own for the request count, so the long polls' requests do not count in its minute. */
  let counted: string
  let inboxId: string

  beforeAll(async () => {
    const url = await migratedDatabase()
    sql = openPostgres(url, { max: 2 })
    a = pgMachine('behind', url, skewed('-40s'))
    b = pgMachine('ahead', url, skewed('+40s'))
    await a.start({ PG_MACHINE_TENANTS: 'hosted:2' })
    await b.start()
    const tenant = a.tenants[0]!
    key = tenant.keys[0]!
    counted = tenant.keys[1]!
    await sql`update organizations set limit_long_polls_per_key = ${LONG_POLLS}, limit_requests_per_key = ${REQUESTS}, limit_requests_per_org = 1000 where id = ${tenant.organizationId}`
    const created = await machineApi(a, 'POST', '/v1/inboxes', key)
    expect(created.status).toBe(201)
    inboxId = created.body.data.id
  })
  afterAll(async () => {
    await Promise.all([a?.remove(), b?.remove()])
    await sql?.end()
    removeDeadFaketimeSegments()
  })

  test('each machine measures its offset to the database: a metric, one warning, /ready fails past the tolerance', async () => {
    expect(await metric(a, 'pigeonhole_database_clock_offset_seconds')).toBeCloseTo(40, 0)
    expect(await metric(b, 'pigeonhole_database_clock_offset_seconds')).toBeCloseTo(-40, 0)
    for (const [machine, words] of [
      [a, 'behind'],
      [b, 'ahead of'],
    ] as const) {
      const warnings = machine
        .output()
        .split('\n')
        .filter((line) => line.includes('"event":"database_clock_offset"'))
      expect(warnings).toHaveLength(1)
      const ready = await machineApi(machine, 'GET', '/ready')
      expect(ready.status).toBe(503)
      expect(ready.body.checks.clock).toBe('failed')
      expect(ready.body.failing.clock).toContain(words)
      expect(ready.body.checks.database).toBe('ok')
    }
  })

  test(`long polls: a key limited to ${LONG_POLLS} gets exactly ${LONG_POLLS} across the machine behind and the one ahead`, async () => {
    const poll = (machine: MachineProcess) =>
      machineApi(machine, 'GET', `/v1/inboxes/${inboxId}/messages?wait_seconds=8`, key)
    const onA = Array.from({ length: LONG_POLLS / 2 }, () => poll(a))
    const onB = Array.from({ length: LONG_POLLS / 2 }, () => poll(b))
    await until(
      async () =>
        (await longPollsWaiting(a, METRICS_TOKEN)) + (await longPollsWaiting(b, METRICS_TOKEN)) === LONG_POLLS,
      'the polls to wait',
      { timeoutMs: 10_000, intervalMs: 50 },
    )
    // More than a heartbeat later, so renewals on either clock have happened too.
    for (const machine of [b, a, b, a]) expect((await poll(machine)).status, machine.name).toBe(429)
    for (const answer of await Promise.all([...onA, ...onB])) expect(answer.status).toBe(204)
  })

  test(`requests: alternating between them, a key limited to ${REQUESTS} a minute gets exactly ${REQUESTS}`, async () => {
    // All inside one database minute. The machines' own clocks are 80 s apart, so they are
    // always in different minutes of their own (which used to let each admit the limit).
    const second = async () =>
      Number((await sql<{ s: number }[]>`select extract(second from clock_timestamp())::float8 as s`)[0]!.s)
    await until(async () => (await second()) <= 40, 'room left in the database minute', {
      timeoutMs: 25_000,
      intervalMs: 200,
    })
    const minute = async () =>
      (await sql<{ m: string }[]>`select date_trunc('minute', clock_timestamp())::text as m`)[0]!.m
    const began = await minute()
    const statuses: number[] = []
    for (let i = 0; i < REQUESTS * 3; i++)
      statuses.push((await machineApi(i % 2 === 0 ? a : b, 'GET', '/v1/inboxes', counted)).status)
    expect(await minute()).toBe(began)
    expect(statuses.filter((status) => status === 200)).toHaveLength(REQUESTS)
    expect(statuses.filter((status) => status === 429)).toHaveLength(REQUESTS * 2)
    for (const machine of [a, b]) expectDocumentedEvents(machine.output(), machine.name)
  })
}

if (LIBFAKETIME) describeWithPostgres('two machines 80 s apart (one 40 s behind the database, one 40 s ahead)', body)
else
  describe.skip(
    "two machines 80 s apart: Debian's faketime is not installed (apt-get install faketime; .ci/run installs it)",
    body,
  )
