/**
 * Wake-ups across machines in PostgreSQL mode, with real SMTP and HTTP on two assemblies of
 * one database: A publishes its stored messages (the default), B publishes none
 * (DATABASE_WAKE_PUBLISH=off), which stands for every way a wake-up gets lost (B died between
 * its commit and its publication, the NOTIFY failed, a LISTEN connection was down). The
 * storing transaction itself sends no NOTIFY: a session listening on the channel hears a
 * publication of A's stores after their commit and nothing at all for B's; a long poll still
 * hears B's mail, through the once-a-second fallback, and a deletion nobody announced. The
 * `250` still means committed.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { type RunningApp, startApp } from '../../src/app.ts'
import { loadConfig } from '../../src/config.ts'
import { createApiKey } from '../../src/core/api-keys/keys.ts'
import { CLI_ACTOR } from '../../src/core/audit/audit.ts'
import { createOrganization } from '../../src/core/organizations/organizations.ts'
import { createLogger } from '../../src/log.ts'
import type { PostgresInboxNotifier } from '../../src/app/postgres/notifier.ts'
import { openPostgres, type Sql } from '../../src/storage/postgres/client.ts'
import { WAKE_CHANNEL } from '../../src/storage/postgres/wake-bus.ts'
import { describeWithPostgres, migratedDatabase } from '../support/postgres.ts'
import { scratchDir } from '../support/scratch.ts'
import { sendMail, simpleMessage } from '../support/smtp.ts'
import { layDownSelfSigned } from '../support/tls-seed.ts'
import { until } from '../support/wait.ts'

setDefaultTimeout(60_000)

interface Machine {
  app: RunningApp
  dir: string
}

async function startMachine(url: string, env: Record<string, string> = {}): Promise<Machine> {
  const dir = scratchDir('pigeonhole-wake-')
  const databasePath = join(dir, 'pigeonhole.db')
  const config = loadConfig({
    PORT: '0',
    SMTP_PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_PATH: databasePath,
    DATABASE_URL: url,
    DATABASE_POOL_SIZE: '4',
    RECEIVING_DOMAIN: 'inbox.test',
    ...env,
  })
  await layDownSelfSigned(databasePath, config.receivingDomain)
  const app = await startApp({ config, logger: createLogger('error', () => {}) })
  return { app, dir }
}

describeWithPostgres('wake-ups published after the commit, and the fallback that catches a lost one', () => {
  let a: Machine
  let b: Machine
  let sql: Sql
  let key: string
  /** Every payload on the wake channel since the start, as a session of the test hears it. */
  const heard: string[] = []

  const newInbox = async (machine: Machine): Promise<{ id: string; address: string }> => {
    const response = await fetch(`${machine.app.httpUrl}/v1/inboxes`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
    })
    expect(response.status).toBe(201)
    return ((await response.json()) as { data: { id: string; address: string } }).data
  }
  const poll = (machine: Machine, inboxId: string, waitSeconds: number) =>
    fetch(`${machine.app.httpUrl}/v1/inboxes/${inboxId}/messages?wait_seconds=${waitSeconds}&limit=1`, {
      headers: { authorization: `Bearer ${key}` },
    })
  /**
   * Waits until the machine's polls on these inboxes listen, then a moment for their first
   * query to find nothing (part of the scenario: the mail must arrive while they wait, not
   * before that query, or the query alone would find it).
   */
  const waiting = async (machine: Machine, inboxIds: string[]) => {
    await until(
      () => inboxIds.every((id) => machine.app.services.notifier.listenerCount(id) === 1),
      'the long polls to be listening',
    )
    await Bun.sleep(300)
  }
  const publisher = (machine: Machine) => (machine.app.services.notifier as PostgresInboxNotifier).publisher
  const deliver = async (machine: Machine, address: string, subject: string): Promise<string> => {
    const result = await sendMail(machine.app.smtpPort, { to: [address] }, simpleMessage({ to: address, subject }))
    expect(result.data?.code).toBe(250)
    return result.data!.text.match(/msg_[0-9a-f]{32}/)![0]
  }
  const namedIn = (inboxId: string) => heard.filter((payload) => payload.split(' ').includes(inboxId))

  beforeAll(async () => {
    const url = await migratedDatabase()
    ;[a, b] = await Promise.all([startMachine(url), startMachine(url, { DATABASE_WAKE_PUBLISH: 'off' })])
    sql = openPostgres(url, { max: 2 })
    await sql.listen(WAKE_CHANNEL, (payload) => heard.push(payload))
    const org = await createOrganization(a.app.services, CLI_ACTOR, { name: 'wake', preset: 'local' })
    key = (await createApiKey(a.app.services, CLI_ACTOR, { organizationId: org.id })).key
  })
  afterAll(async () => {
    await Promise.all([a?.app.stop(), b?.app.stop()])
    await sql?.end()
    for (const machine of [a, b]) if (machine) rmSync(machine.dir, { recursive: true, force: true })
  })

  test('a message stored on A wakes a long poll on B: A publishes the inbox after the commit, and the 250 means committed', async () => {
    const inbox = await newInbox(a)
    const answer = poll(b, inbox.id, 30)
    await waiting(b, [inbox.id])
    const messageId = await deliver(a, inbox.address, 'from A')
    // The 250 came after the commit: the row is there for anyone who looks.
    expect(await sql`select id from messages where id = ${messageId}`).toHaveLength(1)
    const response = await answer
    expect(response.status).toBe(200)
    expect(((await response.json()) as { data: { id: string }[] }).data.map((m) => m.id)).toEqual([messageId])
    await until(() => namedIn(inbox.id).length > 0, "A's publication to be heard")
  })

  test("B's publication is lost (here: never sent): no NOTIFY names its inbox, yet a long poll on A hears B's mail, by the fallback re-check", async () => {
    const inbox = await newInbox(b)
    const answer = poll(a, inbox.id, 30)
    await waiting(a, [inbox.id])
    const messageId = await deliver(b, inbox.address, 'from B, unannounced')
    const deliveredAt = performance.now()
    expect(await sql`select id from messages where id = ${messageId}`).toHaveLength(1)
    // Without the fallback the poll would find the message only by its last query at its
    // deadline, 30 s from now; the fallback re-reads every second. 15 s is only a bound far
    // from both, for a busy machine.
    const response = await answer
    expect(performance.now() - deliveredAt).toBeLessThan(15_000)
    expect(response.status).toBe(200)
    expect(((await response.json()) as { data: { id: string }[] }).data.map((m) => m.id)).toEqual([messageId])
    // The storing transaction sent no NOTIFY: had it, the channel would have carried the inbox
    // by the time the poll answered (a second after the commit). This proves nothing came.
    await Bun.sleep(200)
    expect(namedIn(inbox.id)).toEqual([])
  })

  test("an inbox deleted behind every machine's back (no NOTIFY at all) ends the waits on it by the fallback: 404, not a 204 at the deadline", async () => {
    const inbox = await newInbox(a)
    const answer = poll(b, inbox.id, 30)
    await waiting(b, [inbox.id])
    // The fallback has read the inbox once (it ends waits on inboxes it saw and then found gone).
    await (b.app.services.notifier as PostgresInboxNotifier).fallback.recheck()
    await sql`delete from inboxes where id = ${inbox.id}`
    const response = await answer
    expect(response.status).toBe(404)
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('inbox_not_found')
  })

  test("a long poll on B woken by A's mail it does not want waits on and still hears A's next message by NOTIFY, not by the fallback", async () => {
    // Past the time after its LISTEN when A publishes everything, watched or not.
    const notifierA = a.app.services.notifier as PostgresInboxNotifier
    await until(() => !notifierA.publishesFor('inbox_nobody_watches'), "A's publish-everything time to pass")
    const inbox = await newInbox(a)
    const answer = fetch(`${b.app.httpUrl}/v1/inboxes/${inbox.id}/messages?wait_seconds=30&limit=1&subject=the-one`, {
      headers: { authorization: `Bearer ${key}` },
    })
    await waiting(b, [inbox.id])
    const announcements = () => heard.filter((payload) => payload.startsWith('watching:') && payload.includes(inbox.id))
    const announced = announcements().length
    // The first publication uses up B's announcement of a long poll (it usually answers and goes).
    await deliver(a, inbox.address, 'something else')
    await until(() => namedIn(inbox.id).length === 1, "the unwanted message's publication")
    await Bun.sleep(300) // B's poll has looked, found nothing it wants, and said so again
    // At once, not at B's next once-a-second refresh of what it watches.
    expect(announcements().length).toBeGreaterThan(announced)
    const messageId = await deliver(a, inbox.address, 'the-one')
    const deliveredAt = performance.now()
    const response = await answer
    const tookMs = performance.now() - deliveredAt
    expect(response.status).toBe(200)
    expect(((await response.json()) as { data: { id: string }[] }).data.map((m) => m.id)).toEqual([messageId])
    // Published, and heard well within the fallback's second (a few ms here; the bound is for a busy machine).
    await until(() => namedIn(inbox.id).length === 2, "the wanted message's publication")
    expect(tookMs).toBeLessThan(400)
  })

  test('many messages stored on A at once reach B in as many or fewer publications, each naming what committed before it', async () => {
    const inboxes = await Promise.all(Array.from({ length: 12 }, () => newInbox(a)))
    const before = publisher(a).sent()
    const answers = inboxes.map((inbox) => poll(b, inbox.id, 30))
    await waiting(
      b,
      inboxes.map((inbox) => inbox.id),
    )
    await Promise.all(inboxes.map((inbox, i) => deliver(a, inbox.address, `burst ${i}`)))
    for (const response of await Promise.all(answers)) expect(response.status).toBe(200)
    await until(() => inboxes.every((inbox) => namedIn(inbox.id).length > 0), 'every inbox to be published')
    expect(publisher(a).sent() - before).toBeLessThanOrEqual(inboxes.length)
  })
})
