/**
 * createInbox idempotency across machines: two pools on one database stand for two machines,
 * sharing one injected clock. One request per key runs at a time; a duplicate on the other
 * machine gets `in_progress` while the first one's lease lives, the cached body once it
 * completed, and takes the key over once a dead holder's lease has run out. A holder that
 * lost its claim cannot complete it.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { ManualClock } from '../../src/clock.ts'
import { openPostgres, type Sql } from '../../src/storage/postgres/client.ts'
import { createIdempotencyClaims, IdempotencyClaimLost, type IdempotencyClaims } from '../../src/storage/postgres/idempotency-claims.ts'
import { describeWithPostgres, migratedDatabase } from '../support/postgres.ts'

setDefaultTimeout(60_000)

const DAY = 86_400_000
const LEASE = 30_000

describeWithPostgres('idempotency claims across two machines', () => {
  let url: string
  let machineA: Sql
  let machineB: Sql
  let a: IdempotencyClaims
  let b: IdempotencyClaims
  const clock = new ManualClock('2026-03-10T09:00:00.000Z')
  const ORG = 'org_idem'

  beforeAll(async () => {
    url = await migratedDatabase()
    machineA = openPostgres(url, { max: 5 })
    machineB = openPostgres(url, { max: 5 })
    await machineA`insert into organizations (id, name, created_at) values (${ORG}, 'idem', ${new Date(clock.now()).toISOString()})`
    a = createIdempotencyClaims(machineA, { holder: 'machine-a', clock, retentionMs: DAY, leaseMs: LEASE })
    b = createIdempotencyClaims(machineB, { holder: 'machine-b', clock, retentionMs: DAY, leaseMs: LEASE })
  })
  afterAll(async () => {
    await Promise.all([machineA.end(), machineB.end()])
  })

  test('20 duplicates at once from two machines: one runs, the rest are told it is in progress; another body is a reuse', async () => {
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).claim(ORG, 'key-concurrent', 'fp-1')))
    expect(results.filter((r) => r.outcome === 'claimed').length).toBe(1)
    expect(results.filter((r) => r.outcome === 'in_progress').length).toBe(19)
    expect(results.find((r) => r.outcome === 'in_progress')).toEqual({ outcome: 'in_progress', retryAfterSeconds: 1 })
    expect(await b.claim(ORG, 'key-concurrent', 'fp-other')).toEqual({ outcome: 'reused' })
  })

  test('completed in the storing transaction, the other machine replays the body; a rolled-back completion leaves it in progress', async () => {
    const first = await a.claim(ORG, 'key-complete', 'fp-1')
    if (first.outcome !== 'claimed') throw new Error('expected a claim')
    const failed = machineA.begin(async (tx) => {
      await a.complete(tx, first.claim, { data: { id: 'inb_1' } })
      throw new Error('the inbox insert failed')
    })
    await expect(failed).rejects.toThrow('the inbox insert failed')
    expect((await b.claim(ORG, 'key-complete', 'fp-1')).outcome).toBe('in_progress')

    await machineA.begin((tx) => a.complete(tx, first.claim, { data: { id: 'inb_1' } }))
    expect(await b.claim(ORG, 'key-complete', 'fp-1')).toEqual({ outcome: 'cached', responseBody: '{"data":{"id":"inb_1"}}' })
    expect(await b.claim(ORG, 'key-complete', 'fp-2')).toEqual({ outcome: 'reused' })
    expect(await machineA`select 1 from idempotency_leases where idempotency_key = 'key-complete'`).toHaveLength(0)
  })

  test('a released claim can be retried at once from the other machine; releasing twice is harmless', async () => {
    const first = await a.claim(ORG, 'key-release', 'fp-1')
    if (first.outcome !== 'claimed') throw new Error('expected a claim')
    await a.release(first.claim)
    await a.release(first.claim)
    expect((await b.claim(ORG, 'key-release', 'fp-2')).outcome).toBe('claimed') // nothing is replayed after a failure
  })

  test("a dead machine's claim blocks the key until its lease runs out, then the next request takes it over", async () => {
    const dying = openPostgres(url, { max: 2 })
    const dead = createIdempotencyClaims(dying, { holder: 'machine-dead', clock, retentionMs: DAY, leaseMs: LEASE })
    const lost = await dead.claim(ORG, 'key-dead', 'fp-1')
    if (lost.outcome !== 'claimed') throw new Error('expected a claim')
    await dying.end({ timeout: 0 }) // gone mid-request

    // A live machine's claim on another key, kept by its heartbeat.
    const kept = await a.claim(ORG, 'key-live', 'fp-1')
    if (kept.outcome !== 'claimed') throw new Error('expected a claim')

    clock.advance(LEASE - 1)
    expect((await b.claim(ORG, 'key-dead', 'fp-1')).outcome).toBe('in_progress')
    await a.renew()
    clock.advance(1) // the dead lease has run out; the renewed one has not
    const taken = await b.claim(ORG, 'key-dead', 'fp-1')
    expect(taken.outcome).toBe('claimed')
    expect((await b.claim(ORG, 'key-live', 'fp-1')).outcome).toBe('in_progress')
    if (taken.outcome === 'claimed') await machineB.begin((tx) => b.complete(tx, taken.claim, { data: { id: 'inb_2' } }))
    expect(await a.claim(ORG, 'key-dead', 'fp-1')).toEqual({ outcome: 'cached', responseBody: '{"data":{"id":"inb_2"}}' })
  })

  test('a holder whose claim was taken over cannot complete or release it', async () => {
    const stalled = await a.claim(ORG, 'key-stalled', 'fp-1')
    if (stalled.outcome !== 'claimed') throw new Error('expected a claim')
    clock.advance(LEASE) // no heartbeat while it stalled
    const taken = await b.claim(ORG, 'key-stalled', 'fp-1')
    if (taken.outcome !== 'claimed') throw new Error('expected a takeover')
    await expect(machineA.begin((tx) => a.complete(tx, stalled.claim, { data: { id: 'inb_late' } }))).rejects.toBeInstanceOf(IdempotencyClaimLost)
    await a.release(stalled.claim) // must not free the key the other machine now runs
    expect((await a.claim(ORG, 'key-stalled', 'fp-1')).outcome).toBe('in_progress')
  })

  test('a late completion racing a takeover: exactly one of them wins, every time', async () => {
    for (let round = 0; round < 20; round++) {
      const key = `key-race-${round}`
      const first = await a.claim(ORG, key, 'fp-1')
      if (first.outcome !== 'claimed') throw new Error('expected a claim')
      clock.advance(LEASE)
      const [completed, second] = await Promise.all([
        machineA
          .begin((tx) => a.complete(tx, first.claim, { data: { id: `inb_${round}` } }))
          .then(
            () => true,
            (error) => {
              if (error instanceof IdempotencyClaimLost) return false
              throw error
            },
          ),
        b.claim(ORG, key, 'fp-1'),
      ])
      // Completed → the duplicate replays it; not completed → the duplicate runs. Never both.
      expect(second.outcome).toBe(completed ? 'cached' : 'claimed')
    }
  })
})
