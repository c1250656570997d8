/**
 * A lease never outlives a fault, on two real server processes over one PostgreSQL. Machine A
 * holds one of each kind of lease when its path to the database is cut (test/support/tcp-cut.ts):
 * long-poll slots, a person's live-view slots (the console's streams), quota reservations (the
 * monthly quota, an inbox's burst) and an idempotency claim of a createInbox in flight. Their requests end during the outage, so each release
 * fails. Machine B keeps its database throughout. Once A's path is back, every one of them is
 * free within 5 s, seen from B: new long polls with the key are admitted, the organisation's
 * mail is accepted up to its limits again, the person's live views open, and the same
 * Idempotency-Key creates its inbox.
 * Before, A's heartbeat renewed every row of A and these stayed taken for as long as A ran.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { MAX_STREAMS_PER_USER } from '../../src/console/live-streams.ts'
import { openPostgres, type Sql } from '../../src/storage/postgres/client.ts'
import { ConsoleClient, PASSWORD, signedIn } from '../support/console-client.ts'
import { type EventStream, openEventStream } from '../support/event-stream.ts'
import { FAKE_TOKEN, FAKE_ZONE, type FakeCloudflare, startFakeCloudflare } from '../support/fakes/cloudflare-api.ts'
import { longPollsWaiting, type MachineProcess, machineApi, pgMachine } from '../support/pg-processes.ts'
import { expectDocumentedEvents } from '../support/log-events.ts'
import { describeWithPostgres, migratedDatabase } from '../support/postgres.ts'
import { SmtpClient, sendMail, simpleMessage } from '../support/smtp.ts'
import { type TcpCut, tcpCut } from '../support/tcp-cut.ts'
import { until } from '../support/wait.ts'

setDefaultTimeout(90_000)

const METRICS_TOKEN = 'multi-lease-faults-metrics-token'
/** Each kind's limit, small so that A's held leases fill it. */
const LIMIT = 3
/** The outage: longer than a heartbeat's third of a lease would matter, shorter than a lease. */
const OUTAGE_MS = 7_000
/** The promise: free within 5 s of the database answering again. */
const FREE_WITHIN_MS = 5_000

/** An SMTP session on `machine` with `address` accepted at RCPT (a unit reserved), left open. */
async function heldTransaction(machine: MachineProcess, address: string): Promise<SmtpClient> {
  const client = await SmtpClient.connect(machine.smtp)
  expect((await client.command('EHLO lease.test')).code).toBe(250)
  expect((await client.command('MAIL FROM:<sender@example.com>')).code).toBe(250)
  const rcpt = await client.command(`RCPT TO:<${address}>`)
  expect(rcpt.code, rcpt.text).toBe(250)
  return client
}

/** Whether `machine` accepts LIMIT recipients of `address` at once, each in its own transaction (then given back). */
async function acceptsUpToLimit(machine: MachineProcess, address: string): Promise<boolean> {
  const clients = await Promise.all(Array.from({ length: LIMIT }, () => SmtpClient.connect(machine.smtp)))
  try {
    const codes: number[] = []
    for (const client of clients) {
      await client.command('EHLO lease.test')
      await client.command('MAIL FROM:<sender@example.com>')
      codes.push((await client.command(`RCPT TO:<${address}>`)).code)
    }
    return codes.every((code) => code === 250)
  } finally {
    for (const client of clients) client.destroy()
  }
}

const OPERATOR = 'operator@example.com'
/** The operator's live stream, watching one inbox of their organisation (set in beforeAll). */
let livePath = ''

/** Whether the operator, signed in on `machine`, can open all of their live views there at once (closed again after). */
async function opensLiveViews(machine: MachineProcess): Promise<boolean> {
  const client = await signedIn({ url: machine.httpUrl }, OPERATOR)
  const streams = await Promise.all(
    Array.from({ length: MAX_STREAMS_PER_USER }, () => openEventStream(client, livePath)),
  )
  for (const stream of streams) stream.abort()
  return streams.every((stream) => stream.response.status === 200)
}

/** Whether `machine` admits LIMIT long polls with `key` at once (each waits a second). */
async function admitsLongPolls(machine: MachineProcess, key: string, inboxId: string): Promise<boolean> {
  const answers = await Promise.all(
    Array.from({ length: LIMIT }, () =>
      machineApi(machine, 'GET', `/v1/inboxes/${inboxId}/messages?wait_seconds=1`, key),
    ),
  )
  return answers.every((answer) => answer.status === 204)
}

describeWithPostgres('leases held by a machine whose database goes away', () => {
  let fake: FakeCloudflare
  let sql: Sql
  let relay: TcpCut
  let a: MachineProcess
  let b: MachineProcess

  beforeAll(async () => {
    fake = await startFakeCloudflare()
    const direct = new URL(await migratedDatabase())
    sql = openPostgres(direct.href, { max: 2 })
    relay = tcpCut(direct.hostname, Number(direct.port))
    const relayed = new URL(direct)
    relayed.port = String(relay.port)
    const env = {
      METRICS_TOKEN,
      EMAIL_ROUTING: 'cloudflare',
      CLOUDFLARE_API_TOKEN: FAKE_TOKEN,
      CLOUDFLARE_ZONE_ID: FAKE_ZONE,
      CLOUDFLARE_API_BASE: fake.baseUrl,
    }
    a = pgMachine('a', relayed.href, env)
    b = pgMachine('b', direct.href, env)
    await a.start({ PG_MACHINE_TENANTS: 'hosted:1,hosted:1,hosted:1' })
    await b.start()
    const [polls, monthly, burst] = a.tenants
    await sql`update organizations set limit_long_polls_per_key = ${LIMIT} where id = ${polls!.organizationId}`
    await sql`update organizations set limit_monthly_emails = ${LIMIT} where id = ${monthly!.organizationId}`
    await sql`update organizations set limit_inbox_burst = ${LIMIT} where id = ${burst!.organizationId}`
    // A console operator, for the live views.
    const setup = new URL(a.setupUrl!)
    const operator = new ConsoleClient(a.httpUrl)
    expect((await operator.get(setup.pathname + setup.search)).status).toBe(200)
    const made = await operator.post('/setup', {
      token: setup.searchParams.get('token')!,
      email: OPERATOR,
      password: PASSWORD,
      organization: 'Viewers',
      preset: 'hosted',
    })
    expect(made.status).toBe(303) // to the page that shows the first key (post/redirect/get)
    const done = await operator.get(made.location!)
    expect(done.status).toBe(200)
    const key = /value="(ph_live_[0-9a-f_]+)"/.exec(done.html)![1]!
    const organizationId = /\/console\/orgs\/(org_[0-9a-f]{32})/.exec(done.html)![1]!
    const watched = await machineApi(a, 'POST', '/v1/inboxes', key)
    expect(watched.status).toBe(201)
    livePath = `/console/live?watch=${encodeURIComponent(`${organizationId}:${watched.body.data.id}`)}`
  })
  afterAll(async () => {
    relay?.restore()
    await Promise.all([a?.remove(), b?.remove()])
    relay?.stop()
    await sql?.end()
    await fake?.stop()
  })

  test(`long-poll slots, live views, quota reservations, burst holds and an idempotency claim are free within ${FREE_WITHIN_MS / 1000} s of the database's return`, async () => {
    const [polls, monthly, burst] = a.tenants.map((tenant) => tenant.keys[0]!) as [string, string, string]
    const inbox = async (key: string) => {
      const created = await machineApi(a, 'POST', '/v1/inboxes', key)
      expect(created.status, created.text).toBe(201)
      return created.body.data as { id: string; address: string }
    }
    const [pollInbox, monthlyInbox, burstInbox] = [await inbox(polls), await inbox(monthly), await inbox(burst)]

    // A holds every unit of the monthly quota and of the inbox's burst ...
    const transactions = [
      ...(await Promise.all(Array.from({ length: LIMIT }, () => heldTransaction(a, monthlyInbox.address)))),
      ...(await Promise.all(Array.from({ length: LIMIT }, () => heldTransaction(a, burstInbox.address)))),
    ]
    expect(await acceptsUpToLimit(b, monthlyInbox.address)).toBe(false)
    // ... all of a person's live views ...
    const viewer = await signedIn({ url: a.httpUrl }, OPERATOR)
    const views: EventStream[] = await Promise.all(
      Array.from({ length: MAX_STREAMS_PER_USER }, () => openEventStream(viewer, livePath)),
    )
    for (const view of views) expect(view.response.status).toBe(200)
    expect(await opensLiveViews(b)).toBe(false)
    // ... the claim of a createInbox whose routing rule is being made ...
    const keyedRule = fake.hold('POST')
    const idempotentCreate = (machine: MachineProcess) =>
      fetch(`${machine.httpUrl}/v1/inboxes`, {
        method: 'POST',
        headers: { authorization: `Bearer ${polls}`, 'idempotency-key': 'lease-faults-key-1' },
      })
    const claimed = idempotentCreate(a)
    await keyedRule.received
    expect((await idempotentCreate(b)).status).toBe(409)

    // ... and, last, every long-poll slot of the key (polls that end inside the outage).
    const waiting = Array.from({ length: LIMIT }, () =>
      machineApi(a, 'GET', `/v1/inboxes/${pollInbox.id}/messages?wait_seconds=3`, polls),
    )
    await until(async () => (await longPollsWaiting(a, METRICS_TOKEN)) === LIMIT, 'the long polls to be parked on A', {
      timeoutMs: 10_000,
      intervalMs: 50,
    })
    expect((await machineApi(b, 'GET', `/v1/inboxes/${pollInbox.id}/messages?wait_seconds=1`, polls)).status).toBe(429)
    relay.cut()
    const cutAt = performance.now()
    // Every request ends while the database is away, so every release fails.
    for (const client of transactions) client.destroy()
    for (const view of views) view.abort()
    keyedRule.release()
    expect((await claimed).status).toBeGreaterThanOrEqual(500)
    for (const answer of await Promise.all(waiting)) expect(answer.status).toBe(500)
    await Bun.sleep(Math.max(0, OUTAGE_MS - (performance.now() - cutAt)))
    relay.restore()
    const back = performance.now()

    const freed: Record<string, number> = {}
    const within = async (what: string, free: () => Promise<boolean>) => {
      await until(free, what, { timeoutMs: FREE_WITHIN_MS + 2_000, intervalMs: 100 })
      freed[what] = Math.round(performance.now() - back)
    }
    const settled = await Promise.allSettled([
      within('long-poll slots', () => admitsLongPolls(b, polls, pollInbox.id)),
      within('quota reservations', () => acceptsUpToLimit(b, monthlyInbox.address)),
      within('burst holds', () => acceptsUpToLimit(b, burstInbox.address)),
      within('live views', () => opensLiveViews(b)),
      within('idempotency claim', async () => (await idempotentCreate(b)).status === 201),
    ])
    expect(
      settled
        .filter((outcome) => outcome.status === 'rejected')
        .map((outcome) => String((outcome as PromiseRejectedResult).reason)),
    ).toEqual([])
    console.info(`freed after the database came back (ms): ${JSON.stringify(freed)}`)
    for (const [what, ms] of Object.entries(freed)) expect(ms, what).toBeLessThanOrEqual(FREE_WITHIN_MS)

    // Nothing was counted for the refused work: the organisation's mail is accepted to its limit.
    const usage = await machineApi(b, 'GET', '/v1/usage', monthly)
    expect(usage.body.emails.received).toBe(0)
    for (let i = 0; i < LIMIT; i++) {
      const sent = await sendMail(
        b.smtp,
        { to: [monthlyInbox.address] },
        simpleMessage({ to: monthlyInbox.address, subject: `after ${i}` }),
      )
      expect(sent.data?.code, JSON.stringify(sent)).toBe(250)
    }
    // A itself admits again too (its own in-memory counts were given back).
    expect(await admitsLongPolls(a, polls, pollInbox.id)).toBe(true)
    for (const machine of [a, b]) expectDocumentedEvents(machine.output(), machine.name)
  })
})
