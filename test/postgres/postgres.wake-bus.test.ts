/**
 * The wake-up bus over LISTEN/NOTIFY, with two pools as two machines: A waits, B stores.
 * B's "store" is a transaction that inserts a row and queues the wake-up, as ingest will.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { openPostgres, type Sql } from '../../src/storage/postgres/client.ts'
import {
  createWakeBus,
  notifyAccessEnded,
  notifyInbox,
  notifyRefusal,
  publishStored,
  storedPayloads,
  type WakeBus,
  type WakeSubscription,
} from '../../src/storage/postgres/wake-bus.ts'
import { describeWithPostgres, freshDatabase, ownCluster, type TestCluster } from '../support/postgres.ts'
import { until } from '../support/wait.ts'

setDefaultTimeout(60_000)

/** Resolves true if `promise` settles within `ms`, false otherwise. */
/** Expected false, it proves that nothing happens within `ms`; expected true, `ms` is only a deadline. */
const settlesWithin = (promise: Promise<unknown>, ms: number) =>
  Promise.race([promise.then(() => true), Bun.sleep(ms).then(() => false)])

// A cluster of this file's own: its tests restart and stop it, and the run's cluster serves
// other files at the same time. Started on first use (where PostgreSQL is missing no test runs).
let cluster: TestCluster | undefined
const ownServer = () => {
  cluster ??= ownCluster()
  return cluster
}
afterAll(() => cluster?.stop())

describeWithPostgres('wake bus', () => {
  let machineA: Sql
  let machineB: Sql
  let bus: WakeBus

  const store = (inboxId: string) =>
    machineB.begin(async (tx) => {
      await tx`insert into mail (inbox_id) values (${inboxId})`
      await notifyInbox(tx, inboxId)
    })
  const stored = async (sql: Sql, inboxId: string) =>
    (await sql<{ n: number }[]>`select count(*)::int as n from mail where inbox_id = ${inboxId}`)[0]!.n

  beforeAll(async () => {
    const url = await freshDatabase(ownServer())
    machineA = openPostgres(url, { max: 3 })
    machineB = openPostgres(url, { max: 3 })
    await machineB`create table mail (inbox_id text not null)`
    bus = createWakeBus(machineA)
  })
  afterAll(async () => {
    await bus.close().catch(() => {})
    await Promise.all([machineA.end(), machineB.end()])
  })

  test('a message committed on B wakes the waiter on A for that inbox only', async () => {
    const waiter = await bus.subscribe('inbox_1')
    const other = await bus.subscribe('inbox_2')
    await store('inbox_1')
    expect(await settlesWithin(waiter.woken, 10_000)).toBe(true)
    expect(await stored(machineA, 'inbox_1')).toBe(1)
    // Proves that nothing happens: the other inbox's waiter stays asleep.
    expect(await settlesWithin(other.woken, 300)).toBe(false)
    other.close()
    expect(bus.waiting()).toBe(0)
  })

  test('no lost wake-up: a message committed between the first query and the wait still wakes it', async () => {
    const waiter = await bus.subscribe('inbox_3')
    expect(await stored(machineA, 'inbox_3')).toBe(0) // the waiter's first query: nothing yet
    await store('inbox_3') // committed before the waiter starts waiting
    expect(await settlesWithin(waiter.woken, 10_000)).toBe(true)
    expect(await stored(machineA, 'inbox_3')).toBe(1)
  })

  test('the wake-up is delivered at commit: not while the transaction is open, never after a rollback', async () => {
    const waiter = await bus.subscribe('inbox_4')
    let commit!: () => void
    const open = new Promise<void>((r) => {
      commit = r
    })
    const transaction = machineB.begin(async (tx) => {
      await tx`insert into mail (inbox_id) values ('inbox_4')`
      await notifyInbox(tx, 'inbox_4')
      await open
    })
    // Proves that nothing happens before the commit.
    expect(await settlesWithin(waiter.woken, 300)).toBe(false)
    commit()
    await transaction
    expect(await settlesWithin(waiter.woken, 10_000)).toBe(true)

    const second = await bus.subscribe('inbox_5')
    await machineB
      .begin(async (tx) => {
        await notifyInbox(tx, 'inbox_5')
        throw new Error('rolled back')
      })
      .catch(() => {})
    // Proves that nothing happens: a rolled-back store wakes nobody.
    expect(await settlesWithin(second.woken, 300)).toBe(false)
    second.close()
  })

  test("an inbox's deletion wakes its waiters too, and the hooks hear every notification with what happened", async () => {
    const heard: string[] = []
    const hooked = createWakeBus(machineA, { onWake: (inboxId, event) => heard.push(`${event} ${inboxId}`) })
    try {
      await hooked.ready()
      const waiter = await hooked.subscribe('inbox_6')
      await machineB.begin((tx) => notifyInbox(tx, 'inbox_6', 'inbox_deleted'))
      expect(await settlesWithin(waiter.woken, 10_000)).toBe(true)
      await store('inbox_7')
      await until(() => heard.length === 2, 'the hook to hear both notifications')
      expect(heard).toEqual(['inbox_deleted inbox_6', 'message_stored inbox_7'])
    } finally {
      await hooked.close()
    }
  })

  test('one publication names many inboxes: every one of them is heard, across NOTIFYs cut under the payload limit', async () => {
    const ids = Array.from({ length: 600 }, (_, i) => `inb_${i.toString(16).padStart(32, '0')}`)
    expect(storedPayloads(ids).length).toBeGreaterThan(1) // the statement must send several
    const heard = new Set<string>()
    const hooked = createWakeBus(machineA, {
      onWake: (inboxId, event) => event === 'message_stored' && heard.add(inboxId),
    })
    try {
      await hooked.ready()
      const first = await hooked.subscribe(ids[0]!)
      const last = await hooked.subscribe(ids.at(-1)!)
      await publishStored(machineB, ids)
      expect(await settlesWithin(Promise.all([first.woken, last.woken]), 10_000)).toBe(true)
      await until(() => heard.size === ids.length, 'every inbox of the publication to be heard')
      // The old single-id payload reads the same: a machine of the previous release is understood.
      const single = await hooked.subscribe('inbox_single')
      await notifyInbox(machineB, 'inbox_single')
      expect(await settlesWithin(single.woken, 10_000)).toBe(true)
    } finally {
      await hooked.close()
    }
  })

  test("the console's news (an access ended, a refused delivery) reaches its hooks and wakes no inbox waiter", async () => {
    const heard: string[] = []
    const hooked = createWakeBus(machineA, {
      onWake: (inboxId, event) => heard.push(`wake ${event} ${inboxId}`),
      onAccessEnded: (userId) => heard.push(`access ${userId}`),
      onRefusal: (body) => heard.push(`refusal ${body}`),
    })
    try {
      await hooked.ready()
      const waiter = await hooked.subscribe('inbox_8')
      await notifyAccessEnded(machineB, 'user_1')
      await notifyRefusal(machineB, '{"news":1}')
      await until(() => heard.length === 2, 'the hooks to hear both notifications')
      expect(heard).toEqual(['access user_1', 'refusal {"news":1}'])
      // Proves that nothing happens: neither is a message for an inbox.
      expect(await settlesWithin(waiter.woken, 300)).toBe(false)
      waiter.close()
    } finally {
      await hooked.close()
    }
  })

  test('after the server restarts: every waiter is woken once to re-query, and later messages wake again', async () => {
    const during = await bus.subscribe('inbox_6')
    ownServer().restart()
    // No message for inbox_6 was stored: the reconnection alone wakes it, because notifications
    // sent while A's LISTEN connection was down are lost.
    expect(await settlesWithin(during.woken, 20_000)).toBe(true)

    const after = await bus.subscribe('inbox_7')
    // B's pool finds its connections dead once, then reconnects by itself.
    for (let attempt = 0; ; attempt++) {
      try {
        await store('inbox_7')
        break
      } catch (error) {
        if (attempt >= 5) throw error
      }
    }
    expect(await settlesWithin(after.woken, 10_000)).toBe(true)
  })
})

describeWithPostgres('wake bus started while the database is down', () => {
  test('subscribe fails while it is down, then works once it is back, with no new bus or restart', async () => {
    const cluster = ownServer()
    const url = await freshDatabase(cluster)
    const machineA = openPostgres(url, { max: 2 })
    const machineB = openPostgres(url, { max: 2 })
    cluster.stop()
    try {
      const bus = createWakeBus(machineA)
      const refused = await bus.subscribe('inbox_down').then(
        () => false,
        () => true,
      )
      expect(refused).toBe(true)
      expect(bus.waiting()).toBe(0)
      cluster.start()
      // The client listens again by itself in the background; a later request's subscribe works.
      let waiter = null as WakeSubscription | null
      const subscribed = async () => {
        waiter = await bus.subscribe('inbox_down').catch(() => null)
        return waiter !== null
      }
      await until(subscribed, 'the bus to come back', { timeoutMs: 20_000, intervalMs: 100 })
      if (!waiter) throw new Error('the bus did not come back')
      await machineB.begin((tx) => notifyInbox(tx, 'inbox_down'))
      expect(await settlesWithin(waiter.woken, 10_000)).toBe(true)
      await bus.close()
    } finally {
      cluster.start()
      await Promise.all([machineA.end(), machineB.end()])
    }
  })
})
