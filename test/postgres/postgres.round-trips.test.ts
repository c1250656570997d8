/**
 * Round trips to PostgreSQL on the path a test waits on: delivering a message over SMTP
 * (RCPT's admission and quota hold, the storing transaction) and reading a message in full
 * (what a woken long poll with include=content reads). Each round trip is a wake-up of the
 * database's process and of ours, which on a busy machine is most of the latency; statements
 * that do not depend on each other's answers go out together. Counted by a relay in front
 * of the cluster (test/support/tcp-cut.ts), after warm-up deliveries so the statements are
 * prepared on the pool's connection (the first use of a statement on a connection costs one
 * more round trip to learn its parameter types).
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { type RunningApp, startApp } from '../../src/app.ts'
import type { PostgresInboxNotifier } from '../../src/app/postgres/notifier.ts'
import { loadConfig } from '../../src/config.ts'
import type { Principal } from '../../src/core/api-keys/authenticate.ts'
import { CLI_ACTOR } from '../../src/core/audit/audit.ts'
import { createInbox } from '../../src/core/inboxes/create-inbox.ts'
import { LOCAL_TESTING_LIMITS } from '../../src/core/limits/organization-limits.ts'
import { createOrganization } from '../../src/core/organizations/organizations.ts'
import { createLogger } from '../../src/log.ts'
import { openPostgres, type Sql } from '../../src/storage/postgres/client.ts'
import { publishWatching } from '../../src/storage/postgres/wake-bus.ts'
import { describeWithPostgres, migratedDatabase } from '../support/postgres.ts'
import { scratchDir } from '../support/scratch.ts'
import { sendMail, simpleMessage } from '../support/smtp.ts'
import { type TcpCut, tcpCut } from '../support/tcp-cut.ts'
import { layDownSelfSigned } from '../support/tls-seed.ts'
import { until } from '../support/wait.ts'

setDefaultTimeout(60_000)

/**
 * One message to one recipient, by statement group: admission facts (1); the quota hold, one
 * call of its function in a transaction of its own (1); the store's BEGIN, inbox locks + inbox
 * rows + newest received_at + quota locks + holds' delete, every row + counters with the COMMIT
 * sent behind them unawaited (3), each group one statement per kind however many deliveries share
 * the transaction; the COMMIT awaited on its own was a fourth. Awaited one
 * statement at a time, with Drizzle's statements unprepared (a describe before each), it was 29,
 * and the full read 9; with the hold's seven statements sent in three groups (BEGIN, the rest,
 * COMMIT), 8. Sending BEGIN and COMMIT with the store's statements on a reserved connection was
 * tried and undone: see bench/README.md, "CPU per message".
 */
const DELIVERY_ROUND_TRIPS = 5
/**
 * After the commit, outside it, the machine publishes the wake-up when another machine watches
 * the inbox: one statement, shared by every delivery the machine stores in the same few
 * milliseconds (one here, alone). Nobody watching elsewhere, none.
 */
const PUBLICATION_ROUND_TRIPS = 1

describeWithPostgres('round trips to PostgreSQL per delivered and per read message', () => {
  let relay: TcpCut
  let app: RunningApp
  let dir: string
  let inbox: { id: string; address: string }
  /** Another machine's connection, beside the relay: its announcements are not counted. */
  let elsewhere: Sql

  beforeAll(async () => {
    const direct = new URL(await migratedDatabase())
    elsewhere = openPostgres(direct.href, { max: 1 })
    relay = tcpCut(direct.hostname, Number(direct.port))
    const relayed = new URL(direct)
    relayed.port = String(relay.port)
    dir = scratchDir('pigeonhole-round-trips-')
    const databasePath = join(dir, 'pigeonhole.db')
    // One connection in the pool: every statement's first use (its describe) is in the warm-up.
    const config = loadConfig({
      PORT: '0',
      SMTP_PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_PATH: databasePath,
      DATABASE_URL: relayed.href,
      DATABASE_POOL_SIZE: '1',
      RECEIVING_DOMAIN: 'inbox.test',
    })
    await layDownSelfSigned(databasePath, config.receivingDomain)
    app = await startApp({ config, logger: createLogger('error', () => {}) })
    const s = app.services
    const org = await createOrganization(s, CLI_ACTOR, { name: 'round trips', preset: 'local' })
    const principal: Principal = { organizationId: org.id, keyPublicId: 'round-trips', limits: LOCAL_TESTING_LIMITS }
    inbox = (await createInbox(s, principal, { body: '', idempotencyKey: null })).body.data
    for (let i = 0; i < 2; i++)
      expect(
        (
          await sendMail(
            app.smtpPort,
            { to: [inbox.address] },
            simpleMessage({ to: inbox.address, subject: `warm-up ${i}` }),
          )
        ).data?.code,
      ).toBe(250)
    await publisher().flush()
    // Past the time after LISTEN's start when a machine publishes every store.
    await until(() => !notifier().publishesFor(inbox.id), 'the start-up publishing to end')
  })
  const notifier = () => app.services.notifier as PostgresInboxNotifier
  const publisher = () => notifier().publisher
  afterAll(async () => {
    await elsewhere?.end()
    await app?.stop()
    relay?.stop()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  /**
   * The round trips of one delivery: `expected` when one of up to three deliveries counted
   * exactly that, else the fewest counted. The machine's own timers (its clock check every 15 s,
   * a held unit's lease renewal) can add one to a delivery on a busy machine; and in one full
   * parallel run a delivery was counted one fewer, once (the relay counts a connection's bytes
   * sent before the server's next answer as one turn, so a statement that goes out behind
   * another one's on the same connection is not counted again). A statement the path really
   * gained, or lost, shows in all three.
   */
  async function deliveryTurns(expected: number, deliver: () => Promise<void>): Promise<number> {
    const counted: number[] = []
    for (let attempt = 0; attempt < 3 && !counted.includes(expected); attempt++) {
      const before = relay.turns()
      await deliver()
      counted.push(relay.turns() - before)
    }
    return counted.includes(expected) ? expected : Math.min(...counted)
  }

  /** One message to the inbox over SMTP, stored (250), and the wake-up publications it made. */
  async function deliverOne(subject: string, publications: number): Promise<void> {
    const sent = publisher().sent()
    const reply = await sendMail(app.smtpPort, { to: [inbox.address] }, simpleMessage({ to: inbox.address, subject }))
    expect(reply.data?.code).toBe(250)
    await publisher().flush()
    expect(publisher().sent() - sent).toBe(publications)
  }

  test(`an SMTP delivery of one message nobody elsewhere waits for costs ${DELIVERY_ROUND_TRIPS} round trips, and no wake-up`, async () => {
    const turns = await deliveryTurns(DELIVERY_ROUND_TRIPS, () => deliverOne('unwatched', 0))
    expect(turns).toBe(DELIVERY_ROUND_TRIPS)
  })

  test(`with a waiter on another machine, its wake-up costs ${PUBLICATION_ROUND_TRIPS} more after the commit`, async () => {
    await publishWatching(elsewhere, 'another-machine', { lasting: [inbox.id], once: [] })
    await until(() => notifier().publishesFor(inbox.id), 'the announcement to be heard')
    const expected = DELIVERY_ROUND_TRIPS + PUBLICATION_ROUND_TRIPS
    const turns = await deliveryTurns(expected, () => deliverOne('counted', 1))
    expect(turns).toBe(expected)
  })

  test('a page with its first message in full (a woken include=content poll) is one round trip, as is getFull', async () => {
    const { store } = app.services
    const listing = {
      inboxId: inbox.id,
      now: new Date().toISOString(),
      filters: {},
      textWindow: 1000,
      after: undefined,
      limit: 2,
    }
    await store.messages.listInboxWithContent(listing, 1) // prepared on the connection
    let before = relay.turns()
    const { rows, full } = await store.messages.listInboxWithContent(listing, 1)
    expect(relay.turns() - before).toBe(1)
    expect(rows).toHaveLength(2)
    expect(full.map((f) => f.message.subject)).toEqual(['counted'])

    const item = { organizationId: rows[0]!.organizationId, id: rows[0]!.id, now: listing.now }
    await store.messages.getFull(item)
    before = relay.turns()
    expect((await store.messages.getFull(item))?.message.id).toBe(rows[0]!.id)
    expect(relay.turns() - before).toBe(1)
  })
})
