/**
 * Wake-ups published only for inboxes another machine watches: two notifiers on one
 * database as two machines (their fallback re-check set out of reach, so a wake-up heard
 * here came by NOTIFY). A store into an inbox nobody elsewhere watches sends nothing; a
 * watcher's announcement makes the stores after it published; and a store the announcement
 * arrives after is published when it arrives, so no wake-up waits for the fallback. An inbox
 * only long polls watch costs one publication per wake-up, not one per message.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { PostgresInboxNotifier } from '../../src/app/postgres/notifier.ts'
import { createLogger } from '../../src/log.ts'
import type { InboxEvent } from '../../src/notifier.ts'
import { openPostgres, type Sql } from '../../src/storage/postgres/client.ts'
import { WAKE_CHANNEL } from '../../src/storage/postgres/wake-bus.ts'
import { describeWithPostgres, migratedDatabase } from '../support/postgres.ts'
import { until } from '../support/wait.ts'

setDefaultTimeout(30_000)

/** Short, so the test outlives the start-up's blind time within a second. */
const WATCH_TTL_MS = 300

interface TwoMachines {
  a: PostgresInboxNotifier
  b: PostgresInboxNotifier
  /** Every payload heard on the wake channel, in order. */
  heard: string[]
  /** Publications of stored messages (space-separated ids) that name `inboxId`. */
  published(inboxId: string): number
}

/**
 * Two notifiers on one fresh database, as machines A and B, and a third connection that
 * hears every publication; set up before the describe's tests, closed after them.
 */
function twoMachines(options: ConstructorParameters<typeof PostgresInboxNotifier>[3]): TwoMachines {
  let poolA: Sql
  let poolB: Sql
  let spy: Sql
  const heard: string[] = []
  const logger = createLogger('silent', () => {})
  const machines = {
    heard,
    published: (inboxId: string) => heard.filter((payload) => payload.split(' ').includes(inboxId)).length,
  } as TwoMachines

  beforeAll(async () => {
    const url = await migratedDatabase()
    poolA = openPostgres(url, { max: 2 })
    poolB = openPostgres(url, { max: 2 })
    spy = openPostgres(url, { max: 1 })
    await spy.listen(WAKE_CHANNEL, (payload) => heard.push(payload))
    machines.a = new PostgresInboxNotifier(poolA, logger, 'machine-a', options)
    machines.b = new PostgresInboxNotifier(poolB, logger, 'machine-b', options)
    await Promise.all([machines.a.ready(), machines.b.ready()])
    await Bun.sleep(WATCH_TTL_MS + 50) // past the blind time that follows LISTEN
  })
  afterAll(async () => {
    await machines.a?.close()
    await machines.b?.close()
    await Promise.all([poolA?.end(), poolB?.end(), spy?.end()])
  })
  return machines
}

const listen = (notifier: PostgresInboxNotifier, inboxId: string) => {
  const events: InboxEvent[] = []
  const stop = notifier.subscribe(inboxId, (event) => events.push(event))
  return { events, stop }
}

describeWithPostgres('wake-ups for watched inboxes only', () => {
  const m = twoMachines({ recheckMs: 600_000, watchTtlMs: WATCH_TTL_MS })
  const { heard, published } = m

  test('a message stored into an inbox no other machine watches is published to nobody', async () => {
    const sent = m.a.publisher.sent()
    m.a.emit('inb_unwatched', 'message_stored')
    await m.a.publisher.flush()
    await Bun.sleep(100)
    expect(m.a.publisher.sent()).toBe(sent)
    expect(published('inb_unwatched')).toBe(0)
  })

  test('a live view on the storing machine hears a store nobody elsewhere watches at once, not at the fallback', async () => {
    const view = listen(m.a, 'inb_viewed_here')
    await Bun.sleep(50)
    m.a.emit('inb_viewed_here', 'message_stored')
    // Synchronously: the fallback is out of reach and no NOTIFY goes out for it.
    expect(view.events).toEqual(['message_stored'])
    await m.a.publisher.flush()
    await Bun.sleep(100)
    expect(published('inb_viewed_here')).toBe(0)
    expect(view.events).toEqual(['message_stored'])
    view.stop()
  })

  test('once a machine announces a waiter on the inbox, the next message stored elsewhere wakes it by NOTIFY', async () => {
    const waiter = listen(m.b, 'inb_watched')
    await until(() => heard.some((payload) => payload.includes('inb_watched')), 'the announcement')
    await Bun.sleep(50) // and A has read it too
    m.a.emit('inb_watched', 'message_stored')
    await until(() => waiter.events.length > 0, 'the wake-up on B')
    expect(waiter.events).toEqual(['message_stored'])
    // The spy's own connection may hear the NOTIFY a moment after B's.
    await until(() => published('inb_watched') === 1, 'the spy to hear the publication')
    waiter.stop()
  })

  test('a message stored just before the announcement reached the storing machine is published when it does', async () => {
    m.a.emit('inb_raced', 'message_stored') // nobody watches yet: not published
    await m.a.publisher.flush()
    expect(published('inb_raced')).toBe(0)
    const waiter = listen(m.b, 'inb_raced') // its first query could have missed that message
    await until(() => waiter.events.length > 0, 'the wake-up on B')
    await until(() => published('inb_raced') === 1, 'the spy to hear the publication')
    waiter.stop()
  })

  test('a waiter that keeps waiting is announced again, so its inbox stays published past the ttl', async () => {
    const waiter = listen(m.b, 'inb_long')
    await Bun.sleep(WATCH_TTL_MS * 3)
    m.a.emit('inb_long', 'message_stored')
    await until(() => waiter.events.length > 0, 'the wake-up on B')
    waiter.stop()
  })
})

describeWithPostgres('wake-ups for inboxes only long polls watch (no refresh within the test)', () => {
  // Announcements counted one by one: the periodic refresh would add its own.
  const m = twoMachines({ recheckMs: 600_000, watchTtlMs: WATCH_TTL_MS, watchRefreshMs: 600_000 })
  const { heard, published } = m

  test("an inbox only long polls watch: one publication wakes them, and the stores after it wait for a poll's next announcement", async () => {
    const poll = () => {
      const events: InboxEvent[] = []
      const stop = m.b.subscribe('inb_polled', (event) => events.push(event), { early: true })
      return { events, stop }
    }
    const first = poll()
    await until(() => heard.some((payload) => payload.includes(';once:inb_polled')), 'the once-announcement')
    await Bun.sleep(50) // and A has read it too
    const sent = m.a.publisher.sent()
    m.a.emit('inb_polled', 'message_stored')
    m.a.emit('inb_polled', 'message_stored')
    m.a.emit('inb_polled', 'message_stored')
    await until(() => first.events.length > 0, 'the wake-up on B')
    await m.a.publisher.flush()
    await Bun.sleep(100)
    // One publication for three messages (per message, the second would have followed the first).
    expect(m.a.publisher.sent() - sent).toBe(1)
    expect(published('inb_polled')).toBe(1)
    // The poll found nothing it wanted and waits on: the stores it has not heard of are published at once.
    m.b.waitingAgain('inb_polled')
    await until(() => published('inb_polled') === 2, 'the publication of the stores after the first')
    await until(() => first.events.length > 1, 'the second wake-up on B')
    first.stop()
    // A live view beside a poll makes the watch lasting: every store is published.
    const second = poll()
    const view = listen(m.b, 'inb_polled')
    await until(
      () => heard.some((payload) => /^watching:machine-b:.*inb_polled/.test(payload)),
      'the lasting announcement',
    )
    await Bun.sleep(50)
    for (let i = 0; i < 3; i++) {
      m.a.emit('inb_polled', 'message_stored')
      await m.a.publisher.flush()
    }
    await until(() => published('inb_polled') === 5, 'three more publications')
    second.stop()
    view.stop()
  })
})
