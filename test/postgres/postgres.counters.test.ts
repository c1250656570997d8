/**
 * Exact counters across machines: two pools on one database stand for two machines, sharing
 * one injected clock. The request counter per UTC minute and the slot leases must hold their
 * limits exactly under concurrency from both, and a dead machine's slots must expire.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { ManualClock } from '../../src/clock.ts'
import { openPostgres, type Sql } from '../../src/storage/postgres/client.ts'
import { admitRequest, sweepRequestCounts } from '../../src/storage/postgres/request-counter.ts'
import { createSlotLeases } from '../../src/storage/postgres/slot-leases.ts'
import { describeWithPostgres, migratedDatabase } from '../support/postgres.ts'
import { until } from '../support/wait.ts'

setDefaultTimeout(60_000)

describeWithPostgres('exact counters across two machines', () => {
  let url: string
  let machineA: Sql
  let machineB: Sql
  const clock = new ManualClock('2026-03-10T09:15:20.000Z')

  beforeAll(async () => {
    url = await migratedDatabase()
    machineA = openPostgres(url, { max: 5 })
    machineB = openPostgres(url, { max: 5 })
  })
  afterAll(async () => {
    await Promise.all([machineA.end(), machineB.end()])
  })

  const admittedCount = (results: { admitted: boolean }[]) => results.filter((r) => r.admitted).length

  test('requests per minute: 300 at once, alternating machines, admit exactly 120; the next minute starts afresh', async () => {
    const subjects = [
      { id: 'key:k1', limit: 120 },
      { id: 'org:o1', limit: 600 },
    ]
    const results = await Promise.all(
      Array.from({ length: 300 }, (_, i) => admitRequest(i % 2 ? machineA : machineB, clock, subjects)),
    )
    expect(admittedCount(results)).toBe(120)
    const refused = results.find((r) => !r.admitted)
    // 09:15:20 → the next minute starts in 40 s.
    expect(refused).toEqual({ admitted: false, full: 'key:k1', retryAfterSeconds: 40 })

    clock.advance(40_000) // 09:16:00
    expect(await admitRequest(machineA, clock, subjects)).toEqual({ admitted: true })
    expect(await sweepRequestCounts(machineB, clock)).toBe(2) // the old minute's two rows
  })

  test('a request is counted against all its subjects or none', async () => {
    // Two keys share an organisation limited to 15 a minute; each key may make 10.
    const org = { id: 'org:o2', limit: 15 }
    const first = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        admitRequest(i % 2 ? machineA : machineB, clock, [{ id: 'key:a', limit: 10 }, org]),
      ),
    )
    expect(admittedCount(first)).toBe(10)
    const second = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        admitRequest(i % 2 ? machineA : machineB, clock, [{ id: 'key:b', limit: 10 }, org]),
      ),
    )
    expect(admittedCount(second)).toBe(5)
    const rows = await machineA<
      { subject_id: string; admitted: number }[]
    >`select subject_id, admitted from request_counts where subject_id in ('key:a', 'key:b', 'org:o2') order by subject_id`
    // key:b's refused requests were not counted against it, nor key:a's against the organisation.
    expect(rows.map((r) => [r.subject_id, r.admitted])).toEqual([
      ['key:a', 10],
      ['key:b', 5],
      ['org:o2', 15],
    ])
  })

  test('slots: 60 acquisitions at once from two machines hold exactly 30 per organisation and 10 per key', async () => {
    const a = createSlotLeases(machineA, { holder: 'machine-a', clock })
    const b = createSlotLeases(machineB, { holder: 'machine-b', clock })
    const org = { id: 'org:slots', limit: 30 }
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, i) => (i % 2 ? a : b).acquire([{ id: `key:s${i % 4}`, limit: 10 }, org])),
    )
    const granted = results.flatMap((r) => (r.acquired ? [r.lease] : []))
    expect(granted.length).toBe(30)
    const perKey = await machineA<
      { subject_id: string; n: number }[]
    >`select subject_id, count(*)::int as n from slot_leases where subject_id like 'key:s%' group by subject_id`
    for (const row of perKey) expect(row.n).toBeLessThanOrEqual(10)
    expect(perKey.reduce((sum, row) => sum + row.n, 0)).toBe(30)

    // Releasing five frees exactly five.
    await Promise.all(granted.slice(0, 5).map((lease) => lease.release()))
    await granted[0]!.release() // twice is harmless
    const more = await Promise.all(
      Array.from({ length: 8 }, (_, i) => (i % 2 ? a : b).acquire([{ id: `key:t${i}`, limit: 10 }, org])),
    )
    expect(more.filter((r) => r.acquired).length).toBe(5)
  })

  test("a dead machine's slots expire after the lease; a live machine's heartbeat keeps its own", async () => {
    const leaseMs = 30_000
    const key = { id: 'key:lease', limit: 10 }
    const dying = openPostgres(url, { max: 2 })
    const dead = createSlotLeases(dying, { holder: 'machine-dead', clock, leaseMs })
    for (let i = 0; i < 6; i++) expect((await dead.acquire([key])).acquired).toBe(true)
    await dying.end({ timeout: 0 }) // the machine is gone without releasing anything

    const live = createSlotLeases(machineA, { holder: 'machine-live', clock, leaseMs })
    for (let i = 0; i < 4; i++) expect((await live.acquire([key])).acquired).toBe(true)
    const other = createSlotLeases(machineB, { holder: 'machine-other', clock, leaseMs })
    expect(await other.acquire([key])).toEqual({ acquired: false, full: 'key:lease' })

    clock.advance(leaseMs / 2)
    await live.renew() // the live machine's heartbeat
    clock.advance(leaseMs / 2) // the dead machine's leases have now run out; the live ones have not
    const after = await Promise.all(Array.from({ length: 8 }, () => other.acquire([key])))
    expect(after.filter((r) => r.acquired).length).toBe(6)
  })

  test('start() renews on its own timer: a held slot outlives its first lease while the machine lives', async () => {
    const leaseMs = 600 // the timer beats every 200 ms of real time
    const key = { id: 'key:beat', limit: 1 }
    const beating = createSlotLeases(machineA, { holder: 'machine-beating', clock, leaseMs })
    const other = createSlotLeases(machineB, { holder: 'machine-other-2', clock, leaseMs })
    expect((await beating.acquire([key])).acquired).toBe(true)
    beating.start()
    try {
      // Three times the lease in all, in steps a beat apart: each beat renews from the clock's time.
      for (let step = 0; step < 6; step++) {
        clock.advance(leaseMs / 2)
        const before = (
          await machineA<
            { at: string }[]
          >`select expires_at::text as at from slot_leases where holder = 'machine-beating'`
        )[0]!.at
        // Wait (real time) until a beat has renewed the lease past the clock's new time.
        const renewed = async () => {
          const [row] = await machineA<
            { at: string }[]
          >`select expires_at::text as at from slot_leases where holder = 'machine-beating'`
          return row!.at !== before
        }
        await until(renewed, 'a beat to renew the lease', { timeoutMs: 10_000, intervalMs: 50 })
        expect(await other.acquire([key])).toEqual({ acquired: false, full: 'key:beat' })
      }
    } finally {
      beating.stop()
    }
    clock.advance(leaseMs) // no more beats: the lease runs out
    expect((await other.acquire([key])).acquired).toBe(true)
  })
})
