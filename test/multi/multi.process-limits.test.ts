/**
 * The per-minute request limits and retention on two real server processes on one database.
 * Both run on an injected clock (PG_MACHINE_CLOCK, moved by the test over the machine's stdin,
 * test/support/pg-machine.ts), as the in-process tests do, so a UTC minute or a retention
 * period is wherever the test puts it: no test straddles a real minute boundary.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import {
  type MachineAnswer,
  type MachineProcess,
  machineApi,
  pgMachine,
  type SweepTurn,
} from '../support/pg-processes.ts'
import { describeWithPostgres, migratedDatabase } from '../support/postgres.ts'
import { expectError } from '../support/shapes.ts'
import { SmtpClient, simpleMessage } from '../support/smtp.ts'

setDefaultTimeout(60_000)

const DAY = 86_400_000

describeWithPostgres('two server processes on one injected clock', () => {
  let a: MachineProcess
  let b: MachineProcess

  const setClock = (at: string | number) => Promise.all([a.setClock(at), b.setClock(at)])

  /** `n` requests by `key`, alternating machines (the first on `first`), 40 at a time; their statuses. */
  async function alternating(key: string, n: number, first = 0): Promise<number[]> {
    const statuses: number[] = []
    for (let sent = 0; sent < n; sent += 40) {
      const batch = Array.from({ length: Math.min(40, n - sent) }, (_, i) =>
        machineApi((first + sent + i) % 2 === 0 ? a : b, 'GET', '/v1/usage', key),
      )
      statuses.push(...(await Promise.all(batch)).map((answer) => answer.status))
    }
    return statuses
  }

  function expectLimited(answer: MachineAnswer, subject: 'key' | 'organization', retryAfter: string): void {
    expectError(answer, 429, 'rate_limit_exceeded')
    expect(answer.body.error.request_id).toBe(answer.headers.get('x-request-id'))
    expect(answer.body.error.message).toBe(
      `Rate limit of ${subject === 'key' ? 120 : 600} requests per minute for this ${subject} exceeded; retry at the next UTC minute.`,
    )
    expect(answer.headers.get('retry-after')).toBe(retryAfter)
  }

  beforeAll(async () => {
    const url = await migratedDatabase()
    // LOG_LEVEL info: each machine's own sweeper logs what it deleted, should its timer fire.
    const env = { PG_MACHINE_CLOCK: '2026-05-04T10:15:30.250Z', LOG_LEVEL: 'info' }
    a = pgMachine('a', url, env)
    b = pgMachine('b', url, env)
    // A hosted organisation with six keys (120 a minute each, 600 together) and a local one.
    await Promise.all([a.start({ PG_MACHINE_TENANTS: 'hosted:6,local:1' }), b.start()])
  })
  afterAll(async () => {
    await Promise.all([a?.remove(), b?.remove()])
  })

  test('the 121st request of a key in a UTC minute, alternating between A and B, gets 429 on either; the next minute admits again', async () => {
    await setClock('2026-05-04T10:15:30.250Z')
    const key = a.tenants[0]!.keys[0]!
    expect(await alternating(key, 120)).toEqual(Array(120).fill(200))
    // 29.75 s to 10:16:00, rounded up. Refused requests count for nothing: both machines refuse.
    for (const machine of [a, b, a]) expectLimited(await machineApi(machine, 'GET', '/v1/usage', key), 'key', '30')
    await setClock('2026-05-04T10:15:59.999Z')
    expectLimited(await machineApi(b, 'GET', '/v1/usage', key), 'key', '1')
    await setClock('2026-05-04T10:16:00.000Z')
    expect(await alternating(key, 120, 1)).toEqual(Array(120).fill(200))
    expectLimited(await machineApi(a, 'GET', '/v1/usage', key), 'key', '60')
  })

  test("the 601st request of an organisation in a UTC minute, over six keys on A and B, gets 429 naming the organisation; the other organisation's keys pass", async () => {
    await setClock('2026-05-04T11:20:45.000Z')
    const { keys } = a.tenants[0]!
    // Five keys at their 120 each: 600 together, spread over both machines.
    for (const [i, key] of keys.slice(0, 5).entries())
      expect(await alternating(key, 120, i)).toEqual(Array(120).fill(200))
    // The sixth key has used none of its own 120: only the organisation's 600 refuses it.
    for (const machine of [b, a])
      expectLimited(await machineApi(machine, 'GET', '/v1/usage', keys[5]!), 'organization', '15')
    expect((await machineApi(a, 'GET', '/v1/usage', a.tenants[1]!.keys[0]!)).status).toBe(200)
    await setClock('2026-05-04T11:21:00.000Z')
    expect((await machineApi(b, 'GET', '/v1/usage', keys[5]!)).status).toBe(200)
  })

  test('retention on both machines: what is older than 30 days is deleted once, by one sweeper at a time; nothing younger is touched', async () => {
    const key = a.tenants[1]!.keys[0]!
    const T0 = Date.parse('2026-06-01T08:00:00.000Z')
    await setClock(T0)
    const inboxes: { id: string; address: string }[] = []
    for (let i = 0; i < 12; i++) {
      const created = await machineApi(i % 2 === 0 ? a : b, 'POST', '/v1/inboxes', key)
      expect(created.status).toBe(201)
      inboxes.push(created.body.data)
    }
    /** `transactions` messages to all 12 inboxes, each stored as 12 messages, half through each machine. */
    async function deliver(subject: string, transactions: number): Promise<void> {
      const clients = await Promise.all([a, b].map((machine) => SmtpClient.connect(machine.smtp)))
      try {
        for (const client of clients) expect((await client.command('EHLO retention.test')).code).toBe(250)
        for (let n = 0; n < transactions; n++) {
          const sent = await clients[n % 2]!.transaction(
            { to: inboxes.map((inbox) => inbox.address) },
            simpleMessage({ to: inboxes[0]!.address, subject }),
          )
          expect(sent.data?.code, JSON.stringify(sent)).toBe(250)
        }
      } finally {
        for (const client of clients) await client.quit()
      }
    }
    // 60 old messages, then 12 ten days younger.
    await deliver('old', 5)
    await setClock(T0 + 10 * DAY)
    await deliver('young', 1)
    const count = async (subject: string) => {
      let n = 0
      for (const [i, inbox] of inboxes.entries()) {
        const listed = await machineApi(
          i % 2 === 0 ? b : a,
          'GET',
          `/v1/inboxes/${inbox.id}/messages?limit=100&subject=${subject}`,
          key,
        )
        expect(listed.status).toBe(200)
        n += listed.body.data.length
      }
      return n
    }
    expect([await count('old'), await count('young')]).toEqual([60, 12])

    // The old messages' last instant: nothing has expired, a sweep deletes nothing.
    await setClock(T0 + 30 * DAY - 1)
    const early = await Promise.all([a.sweep(), b.sweep()])
    expect(early.map((turn) => (turn.turn.ran ? turn.turn.result.messages : 0))).toEqual([0, 0])

    // Past their expiry (an inbox's messages stored in one millisecond are a millisecond apart,
    // so received_at never repeats): both machines' sweepers fire together, turn after turn.
    await setClock(T0 + 30 * DAY + 1_000)
    const turns: (SweepTurn & { machine: string })[] = []
    for (let round = 0; round < 4; round++) {
      const both = await Promise.all([a.sweep(), b.sweep()])
      turns.push({ ...both[0]!, machine: 'a' }, { ...both[1]!, machine: 'b' })
    }
    const ran = turns.filter((turn) => turn.turn.ran)
    expect(ran.length).toBeGreaterThan(0)
    // One sweeper at a time: no two turns that ran overlap in time, on one machine or across both.
    const sorted = [...ran].sort((x, y) => x.began - y.began)
    for (let i = 1; i < sorted.length; i++) expect(sorted[i]!.began).toBeGreaterThanOrEqual(sorted[i - 1]!.ended)
    // Deleted once: the turns' counts, with any turn of a machine's own timer, add up to 60.
    const ownTimers = [a, b].flatMap((machine) =>
      machine
        .output()
        .split('\n')
        .filter((line) => line.includes('"event":"retention_sweep"'))
        .map((line) => JSON.parse(line).deleted_messages as number),
    )
    const deleted = ran.reduce((sum, turn) => sum + (turn.turn.ran ? turn.turn.result.messages : 0), 0)
    expect(deleted + ownTimers.reduce((sum, n) => sum + n, 0)).toBe(60)
    expect([await count('old'), await count('young')]).toEqual([0, 12])
    const skipped = turns.length - ran.length
    console.info(
      `retention on two machines: ${ran.length} turns ran (${ran.map((turn) => `${turn.machine}:${turn.turn.ran ? turn.turn.result.messages : 0}`).join(' ')}), ${skipped} skipped for the other's lock`,
    )
  })
})
