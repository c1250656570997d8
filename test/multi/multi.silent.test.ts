/**
 * PostgreSQL mode when the database goes silent: machine A reaches the cluster through a relay
 * (test/support/tcp-cut.ts) that keeps every socket open and lets nothing through either way,
 * as a network path that drops every packet or a frozen server looks; machine B keeps its own
 * path. A statement sent into the silence is given up at A's statement timeout plus a margin
 * (its connection destroyed), a new connection at the client's connect timeout, so SMTP answers
 * 451, createInbox 503 with the envelope and Retry-After, and /ready fails, within a bound
 * rather than the minutes the operating system takes to give a connection up. Nothing refused
 * is stored; a long poll parked on A before the silence is woken by mail B stored during it
 * (A's LISTEN connection had nothing pending, so it stayed, and hears what was held); and
 * once the path is back A recovers by itself: a create → send → wait → delete cycle.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { type MachineProcess, machineApi, pgMachine, longPollsWaiting } from '../support/pg-processes.ts'
import { expectDocumentedEvents } from '../support/log-events.ts'
import { describeWithPostgres, migratedDatabase } from '../support/postgres.ts'
import { expectError } from '../support/shapes.ts'
import { SmtpClient, sendMail, simpleMessage } from '../support/smtp.ts'
import { type TcpCut, tcpCut } from '../support/tcp-cut.ts'
import { until, timed } from '../support/wait.ts'

setDefaultTimeout(60_000)

/** A's DATABASE_STATEMENT_TIMEOUT_MS: short, so that the test is too (the default is 10 s). */
const STATEMENT_TIMEOUT_MS = 1_000
/**
 * How soon a refusal must come once the path is silent: a statement on an open connection is
 * given up after the statement timeout plus the 2 s margin (3 s here), a new connection at the
 * client's 5 s connect timeout; the rest is room for two busy cores. Without the silence
 * deadline the statement waits for minutes.
 */
const BOUND_MS = 8_000
const METRICS_TOKEN = 'multi-silent-metrics-token'

const waitsHeld = (machine: MachineProcess) => longPollsWaiting(machine, METRICS_TOKEN)

describeWithPostgres('a machine whose path to the database goes silent', () => {
  let relay: TcpCut
  let a: MachineProcess
  let b: MachineProcess

  beforeAll(async () => {
    const direct = new URL(await migratedDatabase())
    relay = tcpCut(direct.hostname, Number(direct.port))
    const relayed = new URL(direct)
    relayed.port = String(relay.port)
    a = pgMachine('a', relayed.href, { METRICS_TOKEN, DATABASE_STATEMENT_TIMEOUT_MS: String(STATEMENT_TIMEOUT_MS) })
    b = pgMachine('b', direct.href, { METRICS_TOKEN })
    await Promise.all([a.start({ PG_MACHINE_TENANTS: 'local:1' }), b.start()])
  })
  afterAll(async () => {
    relay?.restore()
    await Promise.all([a?.remove(), b?.remove()])
    relay?.stop()
  })

  test('SMTP 451 and the API 503 within the bound, /ready fails, nothing refused is stored, no wake-up lost; A recovers by itself', async () => {
    const key = a.tenants[0]!.keys[0]!
    const created = await machineApi(a, 'POST', '/v1/inboxes', key)
    expect(created.status).toBe(201)
    const inbox: { id: string; address: string } = created.body.data
    const receivedBefore = (await machineApi(a, 'GET', '/v1/usage', key)).body.emails.received
    // A transaction on A with its recipient accepted, and a long poll parked on A, both before the silence.
    const inFlight = await SmtpClient.connect(a.smtp)
    expect((await inFlight.command('EHLO silent.test')).code).toBe(250)
    expect((await inFlight.command('MAIL FROM:<sender@example.com>')).code).toBe(250)
    expect((await inFlight.command(`RCPT TO:<${inbox.address}>`)).code).toBe(250)
    const parked = timed(() =>
      machineApi(a, 'GET', `/v1/inboxes/${inbox.id}/messages?wait_seconds=40&include=content&limit=1`, key),
    )
    await until(async () => (await waitsHeld(a)) === 1, 'the long poll to be parked', {
      timeoutMs: 10_000,
      intervalMs: 50,
    })

    relay.silence()
    // Its DATA is refused, not acknowledged: the message's statements went into the silence.
    const data = await timed(() =>
      inFlight.data(simpleMessage({ to: inbox.address, subject: 'refused in the silence' })),
    )
    expect(data.value.code, JSON.stringify(data.value)).toBe(451)
    expect(data.value.text).toContain('Temporary failure storing the message, try again later')
    expect(data.ms).toBeLessThan(BOUND_MS)
    inFlight.destroy()
    // A new session: the greeting needs no database, the recipient's lookup does.
    const fresh = await SmtpClient.connect(a.smtp)
    expect((await fresh.command('EHLO silent.test')).code).toBe(250)
    expect((await fresh.command('MAIL FROM:<sender@example.com>')).code).toBe(250)
    const rcpt = await timed(() => fresh.command(`RCPT TO:<${inbox.address}>`))
    expect(rcpt.value.code, JSON.stringify(rcpt.value)).toBe(451)
    expect(rcpt.value.text).toContain('Temporary failure storing the message, try again later')
    expect(rcpt.ms).toBeLessThan(BOUND_MS)
    fresh.destroy()
    const refusedCreate = await timed(() => machineApi(a, 'POST', '/v1/inboxes', key))
    expectError(refusedCreate.value, 503, 'storage_unavailable')
    expect(refusedCreate.value.body.error.request_id).toBe(refusedCreate.value.headers.get('x-request-id'))
    expect(refusedCreate.value.headers.get('retry-after')).toBe('5')
    expect(refusedCreate.ms).toBeLessThan(BOUND_MS)
    const readiness = await machineApi(a, 'GET', '/ready')
    expect(readiness.status).toBe(503)
    expect(readiness.body.checks.database).toBe('failed')

    // Mail stored by B meanwhile: its NOTIFY to A's LISTEN connection is held by the silence.
    const viaB = await sendMail(
      b.smtp,
      { to: [inbox.address] },
      simpleMessage({ to: inbox.address, subject: 'stored by b in the silence' }),
    )
    expect(viaB.data?.code, JSON.stringify(viaB)).toBe(250)

    relay.restore()
    // The poll parked before the silence is woken with B's message: no wake-up was lost.
    const woken = await parked
    expect(woken.value.status, `${woken.value.text}\n${a.output().slice(-4000)}`).toBe(200)
    expect(woken.value.body.data[0].subject).toBe('stored by b in the silence')
    // Nobody restarts anything: A's own probe notices the database answers again.
    await until(async () => (await machineApi(a, 'GET', '/ready')).status === 200, 'A to be ready again', {
      timeoutMs: 20_000,
      intervalMs: 200,
    })
    const again = await machineApi(a, 'POST', '/v1/inboxes', key)
    expect(again.status, again.text).toBe(201)
    const { id, address } = again.body.data
    const waiting = machineApi(a, 'GET', `/v1/inboxes/${id}/messages?wait_seconds=30&include=content&limit=1`, key)
    const sent = await sendMail(
      a.smtp,
      { to: [address] },
      simpleMessage({ to: address, subject: 'after the silence', text: 'recovered' }),
    )
    expect(sent.data?.code, JSON.stringify(sent)).toBe(250)
    const answered = await waiting
    expect(answered.status, answered.text).toBe(200)
    expect(answered.body.data[0].subject).toBe('after the silence')
    expect((await machineApi(a, 'DELETE', `/v1/inboxes/${id}`, key)).status).toBe(204)

    // Nothing refused was stored (the refused DATA's statements never ran), and its quota came back.
    const listed = await machineApi(a, 'GET', `/v1/inboxes/${inbox.id}/messages?limit=100`, key)
    expect(listed.body.data.map((message: { subject: string }) => message.subject)).toEqual([
      'stored by b in the silence',
    ])
    expect((await machineApi(a, 'GET', '/v1/usage', key)).body.emails.received).toBe(receivedBefore + 2)
    expect((await machineApi(a, 'DELETE', `/v1/inboxes/${inbox.id}`, key)).status).toBe(204)
    // Said once when the state began and once when it ended (5 s after the last failure:
    // storage-health.ts's quiet time); no request logged an error of its own.
    const eventsOf = () =>
      a
        .output()
        .split('\n')
        .filter((line) => line.startsWith('{"time"'))
        .map((line) => JSON.parse(line).event as string)
    const count = (event: string) => eventsOf().filter((e) => e === event).length
    await until(
      () => count('storage_recovered') >= count('storage_failing'),
      'the end of the failing state to be logged',
      { timeoutMs: 15_000, intervalMs: 100 },
    )
    const events = eventsOf()
    expectDocumentedEvents(a.output(), 'a')
    expect(events.filter((event) => ['unhandled_error', 'smtp_error', 'message_store_failed'].includes(event))).toEqual(
      [],
    )
    expect(events.filter((event) => event === 'storage_failing').length).toBeGreaterThanOrEqual(1)
    expect(events.filter((event) => event === 'storage_failing').length).toBe(
      events.filter((event) => event === 'storage_recovered').length,
    )
    console.info(
      `silent: DATA 451 after ${Math.round(data.ms)} ms, RCPT 451 after ${Math.round(rcpt.ms)} ms, createInbox 503 after ${Math.round(refusedCreate.ms)} ms`,
    )
  })
})
