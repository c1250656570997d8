/**
 * PostgreSQL mode's faults on two real server processes: the database cut off (every
 * connection closed, new ones refused: test/support/tcp-cut.ts between each process and the
 * cluster) and the database server restarting (a cluster of this file's own, so the run's
 * cluster keeps serving the other files). On both processes SMTP answers 451 promptly and
 * acknowledges nothing it did not store, the API answers with the error envelope and
 * Retry-After, /ready fails, a waiting long poll answers by its deadline, and once the
 * database is back both recover by themselves: a whole create → send → wait → delete cycle
 * on each, without a restart.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { type MachineProcess, machineApi, pgMachine, longPollsWaiting } from '../support/pg-processes.ts'
import { expectDocumentedEvents } from '../support/log-events.ts'
import { describeWithPostgres, migratedDatabase, ownCluster, type TestCluster } from '../support/postgres.ts'
import { expectError } from '../support/shapes.ts'
import { type Reply, SmtpClient, sendMail, simpleMessage } from '../support/smtp.ts'
import { type TcpCut, tcpCut } from '../support/tcp-cut.ts'
import { until, timed } from '../support/wait.ts'

setDefaultTimeout(60_000)

/**
 * How soon a refusal must come once the database is away. Measured on loopback it is a few
 * milliseconds (a refused connection fails at once); the bound leaves room for two busy cores
 * and stays at the client's connect timeout (5 s), which is what an unanswered connect costs.
 */
const PROMPT_MS = 5_000
/** The wait a long poll asks for while the database goes away: its answer must come by then. */
const WAIT_SECONDS = 4

async function ready(machine: MachineProcess): Promise<number> {
  return (await machineApi(machine, 'GET', '/ready')).status
}

/** An SMTP session on `machine` with one recipient accepted, left before DATA. */
async function openTransaction(machine: MachineProcess, address: string): Promise<SmtpClient> {
  const client = await SmtpClient.connect(machine.smtp)
  expect((await client.command('EHLO outage.test')).code).toBe(250)
  expect((await client.command('MAIL FROM:<sender@example.com>')).code).toBe(250)
  expect((await client.command(`RCPT TO:<${address}>`)).code).toBe(250)
  return client
}

/** The SMTP exchange while the database is away, on one machine; returns what it measured. */
async function smtpWhileAway(machine: MachineProcess, inFlight: SmtpClient, address: string, subject: string) {
  // A transaction whose recipient was accepted before: its DATA is refused, not acknowledged.
  const data = await timed(() => inFlight.data(simpleMessage({ to: address, subject })))
  expect(data.value.code, `${machine.name}: ${JSON.stringify(data.value)}`).toBe(451)
  // The storage state's own reply, not the catch-all for an error nobody recognised.
  expect(data.value.text).toContain('Temporary failure storing the message, try again later')
  expect(data.ms).toBeLessThan(PROMPT_MS)
  inFlight.destroy()
  // A new session: the greeting needs no database; the recipient's lookup does.
  const fresh = await SmtpClient.connect(machine.smtp)
  try {
    expect((await fresh.command('EHLO outage.test')).code).toBe(250)
    expect((await fresh.command('MAIL FROM:<sender@example.com>')).code).toBe(250)
    const rcpt = await timed(() => fresh.command(`RCPT TO:<${address}>`))
    expect(rcpt.value.code, `${machine.name}: ${JSON.stringify(rcpt.value)}`).toBe(451)
    expect(rcpt.value.text).toContain('Temporary failure storing the message, try again later')
    expect(rcpt.ms).toBeLessThan(PROMPT_MS)
    return { dataMs: data.ms, rcptMs: rcpt.ms, replies: [data.value, rcpt.value] as Reply[] }
  } finally {
    fresh.destroy()
  }
}

/** The API while the database is away, on one machine. */
async function apiWhileAway(machine: MachineProcess, key: string, inboxId: string) {
  // createInbox and deleteInbox list 503 in the interface: storage_unavailable.
  for (const [method, path] of [
    ['POST', '/v1/inboxes'],
    ['DELETE', `/v1/inboxes/${inboxId}`],
  ] as const) {
    const answer = await timed(() => machineApi(machine, method, path, key))
    expectError(answer.value, 503, 'storage_unavailable')
    expect(answer.value.body.error.request_id).toBe(answer.value.headers.get('x-request-id'))
    expect(answer.value.body.error.message).toBe('The server cannot use its storage right now; retry later.')
    expect(answer.value.headers.get('retry-after')).toBe('5')
    expect(answer.ms).toBeLessThan(PROMPT_MS)
  }
  // The other operations list no 503: the interface's 500, with the same retry hint.
  for (const path of ['/v1/inboxes', `/v1/inboxes/${inboxId}`, `/v1/inboxes/${inboxId}/messages`, '/v1/usage']) {
    const answer = await timed(() => machineApi(machine, 'GET', path, key))
    expectError(answer.value, 500, 'internal_error')
    expect(answer.value.body.error.request_id).toBe(answer.value.headers.get('x-request-id'))
    expect(answer.value.headers.get('retry-after')).toBe('5')
    expect(answer.ms).toBeLessThan(PROMPT_MS)
  }
  const readiness = await machineApi(machine, 'GET', '/ready')
  expect(readiness.status).toBe(503)
  expect(readiness.body.checks.database).toBe('failed')
}

/** The recommended test flow on one machine: create → send → wait → assert → delete. */
async function cycle(machine: MachineProcess, key: string, subject: string): Promise<void> {
  const created = await machineApi(machine, 'POST', '/v1/inboxes', key)
  expect(created.status, `${machine.name}: ${created.text}`).toBe(201)
  const { id, address } = created.body.data
  const waiting = machineApi(machine, 'GET', `/v1/inboxes/${id}/messages?wait_seconds=30&include=content&limit=1`, key)
  const sent = await sendMail(
    machine.smtp,
    { to: [address] },
    simpleMessage({ to: address, subject, text: 'after the outage' }),
  )
  expect(sent.data?.code, `${machine.name}: ${JSON.stringify(sent)}`).toBe(250)
  const woken = await waiting
  expect(woken.status, `${machine.name}: ${woken.text}`).toBe(200)
  expect(woken.body.data[0].subject).toBe(subject)
  expect(woken.body.data[0].text).toContain('after the outage')
  expect((await machineApi(machine, 'DELETE', `/v1/inboxes/${id}`, key)).status).toBe(204)
}

async function subjectsIn(machine: MachineProcess, key: string, inboxId: string): Promise<string[]> {
  const listed = await machineApi(machine, 'GET', `/v1/inboxes/${inboxId}/messages?limit=100`, key)
  expect(listed.status).toBe(200)
  return listed.body.data.map((message: { subject: string }) => message.subject)
}

/**
 * The whole outage on both machines: `away()` takes the database away, `back()` brings it
 * back. Before: an inbox on each, an SMTP transaction up to RCPT and two parked long polls,
 * one whose deadline falls in the outage and one that outlasts it.
 */
async function outage(
  machines: MachineProcess[],
  key: string,
  away: () => void | Promise<void>,
  back: () => void | Promise<void>,
  label: string,
) {
  const inboxes: { id: string; address: string }[] = []
  for (const machine of machines) {
    const created = await machineApi(machine, 'POST', '/v1/inboxes', key)
    expect(created.status).toBe(201)
    inboxes.push(created.body.data)
  }
  const receivedBefore = (await machineApi(machines[0]!, 'GET', '/v1/usage', key)).body.emails.received
  const inFlight = await Promise.all(machines.map((machine, i) => openTransaction(machine, inboxes[i]!.address)))
  const poll = (machine: MachineProcess, i: number, seconds: number) =>
    timed(() =>
      machineApi(
        machine,
        'GET',
        `/v1/inboxes/${inboxes[i]!.id}/messages?wait_seconds=${seconds}&include=content&limit=1`,
        key,
      ),
    )
  const ending = machines.map((machine, i) => poll(machine, i, WAIT_SECONDS))
  const outlasting = machines.map((machine, i) => poll(machine, i, 40))
  // Every poll parked (past its first query) before the database goes: /metrics counts them.
  await until(
    async () => (await Promise.all(machines.map(waitsHeld))).every((n) => n === 2),
    'the long polls to be parked',
    { timeoutMs: 10_000, intervalMs: 50 },
  )

  await away()
  const measured = await Promise.all(
    machines.map((machine, i) =>
      smtpWhileAway(machine, inFlight[i]!, inboxes[i]!.address, `${label}-refused-${machine.name}`),
    ),
  )
  for (const [i, machine] of machines.entries()) await apiWhileAway(machine, key, inboxes[i]!.id)
  // A poll whose deadline falls in the outage answers at its deadline, not before (even when
  // the outage met its first query). It cannot read the inbox, so it cannot say "nothing
  // arrived" (204): it answers the interface's 500 with the retry hint, and the client's retry
  // finds what arrived.
  const ended = await Promise.all(ending)
  for (const answer of ended) {
    expectError(answer.value, 500, 'internal_error')
    expect(answer.value.headers.get('retry-after')).toBe('5')
    expect(answer.ms).toBeGreaterThanOrEqual(WAIT_SECONDS * 1000 - 50)
    expect(answer.ms).toBeLessThan(WAIT_SECONDS * 1000 + PROMPT_MS)
  }

  await back()
  // Nobody restarts anything: each machine's own probe notices the database is back.
  await until(
    async () => (await Promise.all(machines.map(ready))).every((status) => status === 200),
    'both machines to be ready again',
    { timeoutMs: 30_000, intervalMs: 200 },
  )
  // A poll that outlasted the outage still waits, and mail stored on the other machine wakes it.
  for (const [i, machine] of machines.entries()) {
    const other = machines[(i + 1) % machines.length]!
    const subject = `${label}-woken-${machine.name}`
    const sent = await sendMail(
      other.smtp,
      { to: [inboxes[i]!.address] },
      simpleMessage({ to: inboxes[i]!.address, subject }),
    )
    expect(sent.data?.code, `${other.name}: ${JSON.stringify(sent)}`).toBe(250)
    const woken = await outlasting[i]!
    expect(
      woken.value.status,
      `${machine.name}: ${woken.value.text} after ${Math.round(woken.ms)} ms\n${machine.output().slice(-4000)}`,
    ).toBe(200)
    expect(woken.value.body.data[0].subject).toBe(subject)
  }
  for (const machine of machines) await cycle(machine, key, `${label}-after-${machine.name}`)
  // Nothing refused was stored, and its quota reservation was given back.
  for (const [i, machine] of machines.entries())
    expect(await subjectsIn(machine, key, inboxes[i]!.id)).toEqual([`${label}-woken-${machine.name}`])
  expect((await machineApi(machines[1]!, 'GET', '/v1/usage', key)).body.emails.received).toBe(
    receivedBefore + 2 * machines.length,
  )
  for (const [i, machine] of machines.entries())
    expect((await machineApi(machine, 'DELETE', `/v1/inboxes/${inboxes[i]!.id}`, key)).status).toBe(204)
  // Each machine said so once when the state began and once when it ended (5 s after the last
  // failure: storage-health.ts's quiet time); no request or refusal logged an error of its own.
  for (const machine of machines) {
    const eventsOf = () =>
      machine
        .output()
        .split('\n')
        .filter((line) => line.startsWith('{"time"'))
        .map((line) => JSON.parse(line).event as string)
    const count = (event: string) => eventsOf().filter((e) => e === event).length
    await until(
      () => count('storage_recovered') >= count('storage_failing'),
      `${machine.name}: the end of the failing state to be logged`,
      { timeoutMs: 15_000, intervalMs: 100 },
    )
    const events = eventsOf()
    expectDocumentedEvents(machine.output(), machine.name)
    expect(events.filter((event) => ['unhandled_error', 'smtp_error', 'message_store_failed'].includes(event))).toEqual(
      [],
    )
    expect(events.filter((event) => event === 'storage_failing').length).toBeGreaterThanOrEqual(1)
    expect(events.filter((event) => event === 'storage_failing').length).toBe(
      events.filter((event) => event === 'storage_recovered').length,
    )
  }
  const slowest = Math.max(...measured.flatMap((m) => [m.dataMs, m.rcptMs]))
  console.info(
    `${label}: SMTP 451 within ${Math.round(slowest)} ms on both machines; polls ending in the outage answered after ${ended.map((p) => Math.round(p.ms)).join(', ')} ms`,
  )
}

const METRICS_TOKEN = 'multi-process-faults-metrics-token'

const waitsHeld = (machine: MachineProcess) => longPollsWaiting(machine, METRICS_TOKEN)

describeWithPostgres('two server processes whose database is cut off', () => {
  const relays: TcpCut[] = []
  let a: MachineProcess
  let b: MachineProcess

  beforeAll(async () => {
    const direct = new URL(await migratedDatabase())
    const machines: MachineProcess[] = []
    for (const name of ['a', 'b']) {
      // A relay per machine: each machine loses its own path to the database.
      const relay = tcpCut(direct.hostname, Number(direct.port))
      relays.push(relay)
      const relayed = new URL(direct)
      relayed.port = String(relay.port)
      machines.push(pgMachine(name, relayed.href, { METRICS_TOKEN }))
    }
    ;[a, b] = machines as [MachineProcess, MachineProcess]
    await Promise.all([a.start({ PG_MACHINE_TENANTS: 'local:1' }), b.start()])
  })
  afterAll(async () => {
    for (const relay of relays) relay.restore()
    await Promise.all([a?.remove(), b?.remove()])
    for (const relay of relays) relay.stop()
  })

  test('SMTP 451 promptly, nothing acknowledged unstored, the API 503/500 with the envelope, /ready fails; both recover by themselves', async () => {
    await outage(
      [a, b],
      a.tenants[0]!.keys[0]!,
      () => {
        for (const relay of relays) relay.cut()
      },
      () => {
        for (const relay of relays) relay.restore()
      },
      'cut',
    )
  })
})

describeWithPostgres('two server processes whose database server restarts', () => {
  let cluster: TestCluster
  let a: MachineProcess
  let b: MachineProcess

  beforeAll(async () => {
    cluster = ownCluster()
    const url = await migratedDatabase(cluster)
    a = pgMachine('a', url, { METRICS_TOKEN })
    b = pgMachine('b', url, { METRICS_TOKEN })
    await Promise.all([a.start({ PG_MACHINE_TENANTS: 'local:1' }), b.start()])
  })
  afterAll(async () => {
    cluster?.start()
    await Promise.all([a?.remove(), b?.remove()])
    cluster?.stop()
  })

  test('while it is down and as it comes back: the same answers, and both recover by themselves', async () => {
    await outage(
      [a, b],
      a.tenants[0]!.keys[0]!,
      () => cluster.stop(),
      () => cluster.start(),
      'restart',
    )
  })
})
