/**
 * The console's live-stream bounds across machines: a person's tabs spread over two machines
 * still meet 10 open streams in all, an organisation's members 50, a closed stream frees its
 * slot, and a dead machine's streams stop counting once their leases run out.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { ManualClock } from '../../src/clock.ts'
import { MAX_STREAMS_PER_ORGANIZATION, MAX_STREAMS_PER_USER } from '../../src/console/live-streams.ts'
import { openPostgres, type Sql } from '../../src/storage/postgres/client.ts'
import { createLiveStreamLeases } from '../../src/storage/postgres/live-stream-leases.ts'
import { describeWithPostgres, migratedDatabase } from '../support/postgres.ts'

setDefaultTimeout(60_000)

describeWithPostgres('live-stream bounds across two machines', () => {
  let url: string
  let machineA: Sql
  let machineB: Sql
  const clock = new ManualClock('2026-03-10T09:15:20.000Z')
  const bounds = { perUser: MAX_STREAMS_PER_USER, perOrganization: MAX_STREAMS_PER_ORGANIZATION }

  beforeAll(async () => {
    url = await migratedDatabase()
    machineA = openPostgres(url, { max: 5 })
    machineB = openPostgres(url, { max: 5 })
  })
  afterAll(async () => {
    await Promise.all([machineA.end(), machineB.end()])
  })

  test('one person: 30 tabs at once on two machines open exactly 10; closing one frees one', async () => {
    const a = createLiveStreamLeases(machineA, { holder: 'machine-a', clock, bounds })
    const b = createLiveStreamLeases(machineB, { holder: 'machine-b', clock, bounds })
    const owner = { userId: 'user_1', organizationId: 'org_1' }
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => (i % 2 ? a : b).open(owner)))
    const opened = results.flatMap((r) => (r.opened ? [r.lease] : []))
    expect(opened).toHaveLength(MAX_STREAMS_PER_USER)
    expect(results.find((r) => !r.opened)).toEqual({ opened: false, full: 'user' })

    await opened[0]!.release()
    expect((await b.open(owner)).opened).toBe(true)
    expect(await a.open(owner)).toEqual({ opened: false, full: 'user' })
  })

  test('one organisation: 8 members with 10 tabs each open exactly 50 in all', async () => {
    const a = createLiveStreamLeases(machineA, { holder: 'machine-a2', clock, bounds })
    const b = createLiveStreamLeases(machineB, { holder: 'machine-b2', clock, bounds })
    const attempts = Array.from({ length: 80 }, (_, i) =>
      (i % 2 ? a : b).open({ userId: `user_m${i % 8}`, organizationId: 'org_big' }),
    )
    const results = await Promise.all(attempts)
    expect(results.filter((r) => r.opened)).toHaveLength(MAX_STREAMS_PER_ORGANIZATION)
    expect(results.some((r) => !r.opened && r.full === 'organization')).toBe(true)
    // Long-poll slots of an organisation with the same id are counted apart.
    const [row] = await machineA<
      { n: number }[]
    >`select count(*)::int as n from slot_leases where subject_id = 'stream-org:org_big'`
    expect(row!.n).toBe(MAX_STREAMS_PER_ORGANIZATION)
  })

  test("a dead machine's streams stop counting once their leases run out", async () => {
    const leaseMs = 30_000
    const owner = { userId: 'user_dead', organizationId: 'org_dead' }
    const dying = openPostgres(url, { max: 2 })
    const dead = createLiveStreamLeases(dying, { holder: 'machine-dead', clock, bounds, leaseMs })
    for (let i = 0; i < MAX_STREAMS_PER_USER; i++) expect((await dead.open(owner)).opened).toBe(true)
    await dying.end({ timeout: 0 })
    const live = createLiveStreamLeases(machineA, { holder: 'machine-live', clock, bounds, leaseMs })
    expect(await live.open(owner)).toEqual({ opened: false, full: 'user' })
    clock.advance(leaseMs)
    expect((await live.open(owner)).opened).toBe(true)
  })
})
