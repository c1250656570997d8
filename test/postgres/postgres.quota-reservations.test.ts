/**
 * Quota reservations across machines: two pools on one database stand for two machines,
 * sharing one injected clock. The monthly quota and both five-minute bursts count stored
 * usage plus live reservations exactly under concurrency from both; a reservation is
 * released, converted into stored counts in the storing transaction, or expires with a
 * dead machine's lease.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { ManualClock } from '../../src/clock.ts'
import { openPostgres, type Sql } from '../../src/storage/postgres/client.ts'
import {
  createQuotaReservations,
  type QuotaReservation,
  StoredCounts,
} from '../../src/storage/postgres/quota-reservations.ts'
import { describeWithPostgres, migratedDatabase } from '../support/postgres.ts'
import { until } from '../support/wait.ts'

setDefaultTimeout(60_000)

describeWithPostgres('quota reservations across two machines', () => {
  let url: string
  let machineA: Sql
  let machineB: Sql
  const clock = new ManualClock('2026-03-10T10:02:30.000Z')
  const roomy = { monthlyEmails: 1000, inboxBurst: 1000, orgBurst: 1000 }

  beforeAll(async () => {
    url = await migratedDatabase()
    machineA = openPostgres(url, { max: 5 })
    machineB = openPostgres(url, { max: 5 })
  })
  afterAll(async () => {
    await Promise.all([machineA.end(), machineB.end()])
  })

  const newOrganization = async (id: string, receivedThisMonth = 0) => {
    await machineA`insert into organizations (id, name, created_at) values (${id}, ${id}, ${new Date(clock.now()).toISOString()})`
    if (receivedThisMonth > 0)
      await machineA`insert into monthly_email_usage (organization_id, month, received) values (${id}, '2026-03', ${receivedThisMonth})`
  }
  const reservedOf = (results: { reserved: boolean }[]) => results.filter((r) => r.reserved).length
  const stored = async (org: string) => {
    const [row] = await machineA<
      { received: number }[]
    >`select received from monthly_email_usage where organization_id = ${org} and month = '2026-03'`
    return row?.received ?? 0
  }

  test('monthly quota: 40 reservations at once from two machines with 10 units left take exactly 10', async () => {
    await newOrganization('org_month', 90)
    const a = createQuotaReservations(machineA, { holder: 'machine-a', clock })
    const b = createQuotaReservations(machineB, { holder: 'machine-b', clock })
    const limits = { ...roomy, monthlyEmails: 100 }
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        (i % 2 ? a : b).reserve({ organizationId: 'org_month', inboxId: `inb_m${i}` }, limits),
      ),
    )
    expect(reservedOf(results)).toBe(10)
    expect(results.find((r) => !r.reserved)).toEqual({ reserved: false, refusal: 'monthly_quota_exceeded', limit: 100 })
  })

  test('bursts: an inbox takes exactly its 10, its organisation exactly its 25, under 2×30 at once', async () => {
    await newOrganization('org_burst')
    const a = createQuotaReservations(machineA, { holder: 'machine-a', clock })
    const b = createQuotaReservations(machineB, { holder: 'machine-b', clock })
    const limits = { monthlyEmails: 1000, inboxBurst: 10, orgBurst: 25 }
    const one = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        (i % 2 ? a : b).reserve({ organizationId: 'org_burst', inboxId: 'inb_hot' }, limits),
      ),
    )
    expect(reservedOf(one)).toBe(10)
    expect(one.find((r) => !r.reserved)).toEqual({ reserved: false, refusal: 'inbox_burst_exceeded', limit: 10 })
    const many = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        (i % 2 ? a : b).reserve({ organizationId: 'org_burst', inboxId: `inb_b${i % 5}` }, limits),
      ),
    )
    expect(reservedOf(many)).toBe(15)
    expect(many.find((r) => !r.reserved)).toEqual({
      reserved: false,
      refusal: 'organization_burst_exceeded',
      limit: 25,
    })
  })

  test('release frees exactly the released units; releasing twice is harmless', async () => {
    await newOrganization('org_release', 95)
    const a = createQuotaReservations(machineA, { holder: 'machine-a', clock })
    const b = createQuotaReservations(machineB, { holder: 'machine-b', clock })
    const limits = { ...roomy, monthlyEmails: 100 }
    const held: QuotaReservation[] = []
    for (let i = 0; i < 5; i++) {
      const r = await a.reserve({ organizationId: 'org_release', inboxId: 'inb_r' }, limits)
      if (r.reserved) held.push(r.reservation)
    }
    expect(held.length).toBe(5)
    expect((await b.reserve({ organizationId: 'org_release', inboxId: 'inb_r' }, limits)).reserved).toBe(false)
    await a.release(held[0]!)
    await a.release(held[0]!)
    await a.release(held[1]!)
    const again = await Promise.all(
      Array.from({ length: 6 }, () => b.reserve({ organizationId: 'org_release', inboxId: 'inb_r' }, limits)),
    )
    expect(reservedOf(again)).toBe(2)
  })

  test('conversion: the storing transaction turns the unit into a stored count, never both nor neither; a rollback keeps it reserved', async () => {
    await newOrganization('org_convert', 98)
    const a = createQuotaReservations(machineA, { holder: 'machine-a', clock })
    const b = createQuotaReservations(machineB, { holder: 'machine-b', clock })
    const limits = { ...roomy, monthlyEmails: 100 }
    const first = await a.reserve({ organizationId: 'org_convert', inboxId: 'inb_c' }, limits)
    const second = await a.reserve({ organizationId: 'org_convert', inboxId: 'inb_c' }, limits)
    if (!first.reserved || !second.reserved) throw new Error('expected two units')

    // A storing transaction that fails after converting leaves the reservation in place.
    const failed = machineA.begin(async (tx) => {
      expect(await a.convert(tx, first.reservation, limits)).toEqual({ counted: true })
      throw new Error('the message insert failed')
    })
    await expect(failed).rejects.toThrow('the message insert failed')
    expect(await stored('org_convert')).toBe(98)
    expect((await b.reserve({ organizationId: 'org_convert', inboxId: 'inb_c' }, limits)).reserved).toBe(false)

    await machineA.begin((tx) => a.convert(tx, first.reservation, limits))
    expect(await stored('org_convert')).toBe(99)
    const [bursts] = await machineA<
      { n: number }[]
    >`select sum(accepted)::int as n from inbound_bursts where subject_id in ('inb_c', 'org_convert')`
    expect(bursts!.n).toBe(2) // the inbox's and the organisation's bucket
    expect(await machineA`select 1 from quota_reservations where id = ${first.reservation.id}`).toHaveLength(0)
    // One stored plus one reserved: still full, not 98 + 2 + 1 nor 99 + 0.
    expect((await b.reserve({ organizationId: 'org_convert', inboxId: 'inb_c' }, limits)).reserved).toBe(false)
    await machineA.begin((tx) => a.convert(tx, second.reservation, limits))
    expect(await stored('org_convert')).toBe(100)
  })

  test('a unit reserved at 10:04:59 and stored at 10:05:00 is re-checked in the new bucket without counting against itself', async () => {
    await newOrganization('org_turn', 99)
    const a = createQuotaReservations(machineA, { holder: 'machine-a', clock })
    const limits = { monthlyEmails: 100, inboxBurst: 3, orgBurst: 1000 }
    clock.set('2026-03-10T10:04:59.000Z')
    const last = await a.reserve({ organizationId: 'org_turn', inboxId: 'inb_t' }, limits)
    if (!last.reserved) throw new Error('expected the last unit')
    clock.set('2026-03-10T10:05:00.000Z')
    expect(await machineA.begin((tx) => a.convert(tx, last.reservation, limits))).toEqual({ counted: true })
    const [bucket] = await machineA<
      { at: string }[]
    >`select bucket_starts_at::text as at from inbound_bursts where subject_id = 'inb_t'`
    expect(bucket!.at).toBe('2026-03-10 10:05:00+00')

    // In the new bucket, an inbox already full refuses a unit reserved in the old one.
    await newOrganization('org_turn_full')
    clock.set('2026-03-10T10:09:59.000Z')
    const old = await a.reserve({ organizationId: 'org_turn_full', inboxId: 'inb_tf' }, limits)
    if (!old.reserved) throw new Error('expected a unit')
    clock.set('2026-03-10T10:10:00.000Z')
    for (let i = 0; i < 3; i++)
      expect((await a.reserve({ organizationId: 'org_turn_full', inboxId: 'inb_tf' }, limits)).reserved).toBe(true)
    expect(await machineA.begin((tx) => a.convert(tx, old.reservation, limits))).toEqual({
      counted: false,
      refusal: 'inbox_burst_exceeded',
      limit: 3,
    })
    clock.set('2026-03-10T10:02:30.000Z')
  })

  test("a batch's units converted in one transaction, re-checked in a turned bucket: each sees the ones counted before it, so exactly the room left is counted", async () => {
    await newOrganization('org_batch_turn')
    await newOrganization('org_batch_other')
    const a = createQuotaReservations(machineA, { holder: 'machine-a', clock })
    const limits = { monthlyEmails: 100, inboxBurst: 3, orgBurst: 1000 }
    clock.set('2026-03-10T10:14:59.000Z')
    const units: QuotaReservation[] = []
    for (const target of [
      { organizationId: 'org_batch_turn', inboxId: 'inb_bt' },
      { organizationId: 'org_batch_turn', inboxId: 'inb_bt' },
      { organizationId: 'org_batch_other', inboxId: 'inb_bo' },
      { organizationId: 'org_batch_turn', inboxId: 'inb_bt' },
    ]) {
      const held = await a.reserve(target, limits)
      if (!held.reserved) throw new Error('expected a unit')
      units.push(held.reservation)
    }
    clock.set('2026-03-10T10:15:00.000Z')
    // One copy already in the new bucket: inb_bt has room for two of its three old units.
    const fresh = await a.reserve({ organizationId: 'org_batch_turn', inboxId: 'inb_bt' }, limits)
    if (!fresh.reserved) throw new Error('expected a unit')
    await machineA.begin((tx) => a.convert(tx, fresh.reservation, limits))
    const results = await machineA.begin(async (tx) => {
      const counts = new StoredCounts()
      const { answered, units: pending } = a.beginConvert(tx, units)
      await answered
      const converted = []
      for (const unit of pending) converted.push(await unit.finish(limits, counts))
      await counts.send(tx)
      return converted
    })
    expect(results).toEqual([
      { counted: true },
      { counted: true },
      { counted: true },
      { counted: false, refusal: 'inbox_burst_exceeded', limit: 3 },
    ])
    const burst = async (subject: string) =>
      (
        await machineA<
          { accepted: number }[]
        >`select accepted from inbound_bursts where subject_id = ${subject} and bucket_starts_at = '2026-03-10T10:15:00Z'`
      )[0]?.accepted
    expect(await burst('inb_bt')).toBe(3)
    expect(await burst('org_batch_turn')).toBe(3)
    expect(await burst('inb_bo')).toBe(1)
    expect(await burst('org_batch_other')).toBe(1)
    expect(await stored('org_batch_turn')).toBe(3)
    expect(await stored('org_batch_other')).toBe(1)
    expect(
      Number(
        (
          await machineA<
            { n: string }[]
          >`select count(*) as n from quota_reservations where organization_id in ('org_batch_turn', 'org_batch_other')`
        )[0]!.n,
      ),
    ).toBe(0)
    clock.set('2026-03-10T10:02:30.000Z')
  })

  test('a hold lost before its store (as a crash loses a hold whose commit was not yet flushed) is checked again: counted with room, refused without', async () => {
    await newOrganization('org_lost', 98)
    const a = createQuotaReservations(machineA, { holder: 'machine-a', clock })
    const limits = { monthlyEmails: 100, inboxBurst: 1000, orgBurst: 1000 }
    const first = await a.reserve({ organizationId: 'org_lost', inboxId: 'inb_l' }, limits)
    const second = await a.reserve({ organizationId: 'org_lost', inboxId: 'inb_l' }, limits)
    if (!first.reserved || !second.reserved) throw new Error('expected two units')
    await machineA`delete from quota_reservations where organization_id = 'org_lost'`
    // A third sender takes the room the lost holds no longer count.
    expect((await a.reserve({ organizationId: 'org_lost', inboxId: 'inb_l' }, limits)).reserved).toBe(true)
    expect(await machineA.begin((tx) => a.convert(tx, first.reservation, limits))).toEqual({ counted: true })
    expect(await machineA.begin((tx) => a.convert(tx, second.reservation, limits))).toEqual({
      counted: false,
      refusal: 'monthly_quota_exceeded',
      limit: 100,
    })
    expect(await stored('org_lost')).toBe(99)
  })

  test("a dead machine's reservations count until its lease runs out; a live machine's heartbeat keeps its own", async () => {
    await newOrganization('org_lease', 90)
    const leaseMs = 30_000
    const limits = { ...roomy, monthlyEmails: 100 }
    const target = { organizationId: 'org_lease', inboxId: 'inb_l' }
    const dying = openPostgres(url, { max: 2 })
    const dead = createQuotaReservations(dying, { holder: 'machine-dead', clock, leaseMs })
    for (let i = 0; i < 6; i++) expect((await dead.reserve(target, limits)).reserved).toBe(true)
    await dying.end({ timeout: 0 }) // gone without releasing anything

    const live = createQuotaReservations(machineA, { holder: 'machine-live', clock, leaseMs })
    const kept: QuotaReservation[] = []
    for (let i = 0; i < 4; i++) {
      const r = await live.reserve(target, limits)
      if (r.reserved) kept.push(r.reservation)
    }
    expect(kept.length).toBe(4)
    const other = createQuotaReservations(machineB, { holder: 'machine-other', clock, leaseMs })
    expect(await other.reserve(target, limits)).toEqual({
      reserved: false,
      refusal: 'monthly_quota_exceeded',
      limit: 100,
    })

    clock.advance(leaseMs / 2)
    await live.renew()
    clock.advance(leaseMs / 2) // the dead machine's six have run out; the live four have not
    const after = await Promise.all(Array.from({ length: 8 }, () => other.reserve(target, limits)))
    expect(reservedOf(after)).toBe(6)
    // The live machine's units still convert: they were never given away.
    for (const reservation of kept)
      expect(await machineA.begin((tx) => live.convert(tx, reservation, limits))).toEqual({ counted: true })
    expect(await stored('org_lease')).toBe(94)
  })

  test('a unit whose lease ran out while its machine stalled is re-checked when stored, and refused if another took it', async () => {
    await newOrganization('org_stall', 99)
    const leaseMs = 30_000
    const limits = { ...roomy, monthlyEmails: 100 }
    const target = { organizationId: 'org_stall', inboxId: 'inb_s' }
    const stalled = createQuotaReservations(machineA, { holder: 'machine-stalled', clock, leaseMs })
    const other = createQuotaReservations(machineB, { holder: 'machine-other', clock, leaseMs })
    const late = await stalled.reserve(target, limits)
    if (!late.reserved) throw new Error('expected the last unit')
    clock.advance(leaseMs) // no heartbeat: the lease runs out
    const taken = await other.reserve(target, limits)
    if (!taken.reserved) throw new Error('the expired unit should be free')
    await machineB.begin((tx) => other.convert(tx, taken.reservation, limits))
    expect(await machineA.begin((tx) => stalled.convert(tx, late.reservation, limits))).toEqual({
      counted: false,
      refusal: 'monthly_quota_exceeded',
      limit: 100,
    })
    expect(await stored('org_stall')).toBe(100)
  })

  test("the hold's function: the last unit of each limit taken, the next refused in the spec's order; its commit unflushed", async () => {
    await newOrganization('org_function', 98)
    const hold = (tx: Sql, id: string, inbox: string, limits: [number, number, number]) =>
      tx<
        { refusal: string | null }[]
      >`select pigeonhole_quota_hold(${id}, 'org_function', ${inbox}, '2026-03', '2026-03-10T10:00:00.000Z', 'machine-t',
        '2026-03-10T10:02:30.000Z', '2026-03-10T10:03:00.000Z', ${limits[0]}, ${limits[1]}, ${limits[2]}) as refusal`.then(
        ([row]) => row!.refusal,
      )
    const connection = await machineA.reserve()
    try {
      // Inside a caller's transaction: the setting it made lasts to that transaction's commit.
      await connection`begin`
      expect(await hold(connection, 'qres_f1', 'inb_f1', [100, 10, 25])).toBeNull()
      const [setting] = await connection<{ value: string }[]>`select current_setting('synchronous_commit') as value`
      expect(setting!.value).toBe('off')
      await connection`commit`
    } finally {
      connection.release()
    }
    // 98 stored + 1 held: one unit left of 100. Every limit full at once refuses with the monthly
    // quota first, then the inbox's burst, then the organisation's, and holds nothing.
    expect(await hold(machineB, 'qres_f2', 'inb_f1', [99, 1, 1])).toBe('monthly_quota_exceeded')
    expect(await hold(machineB, 'qres_f3', 'inb_f1', [100, 1, 1])).toBe('inbox_burst_exceeded')
    expect(await hold(machineB, 'qres_f4', 'inb_f2', [100, 10, 1])).toBe('organization_burst_exceeded')
    expect(await hold(machineB, 'qres_f5', 'inb_f2', [100, 10, 2])).toBeNull()
    expect(await hold(machineA, 'qres_f6', 'inb_f3', [1000, 10, 25])).toBeNull()
    expect(await hold(machineA, 'qres_f7', 'inb_f3', [100, 10, 25])).toBe('monthly_quota_exceeded')
    const [row] = await machineA<
      { ids: string[] }[]
    >`select array_agg(id order by id) as ids from quota_reservations where organization_id = 'org_function'`
    expect(row!.ids).toEqual(['qres_f1', 'qres_f5', 'qres_f6'])
  })

  test('a hold does not wait for a store converting a unit of its organisation, and counts that unit exactly once', async () => {
    await newOrganization('org_no_wait', 98)
    // Each machine its own clock, in the same five-minute bucket: B's a minute on, past A's leases.
    const clockA = new ManualClock('2026-03-10T10:06:00.000Z')
    const clockB = new ManualClock('2026-03-10T10:07:00.000Z')
    const a = createQuotaReservations(machineA, { holder: 'machine-a', clock: clockA })
    // A pool whose statements give up after a second: a hold queued behind the store would fail.
    const impatient = openPostgres(url, { max: 2, statementTimeoutMs: 1000 })
    const b = createQuotaReservations(impatient, { holder: 'machine-b', clock: clockB })
    try {
      const limits = { ...roomy, monthlyEmails: 100 }
      const first = await a.reserve({ organizationId: 'org_no_wait', inboxId: 'inb_nw' }, limits)
      const second = await a.reserve({ organizationId: 'org_no_wait', inboxId: 'inb_nw' }, limits)
      if (!first.reserved || !second.reserved) throw new Error('expected two units')
      const during = await machineA.begin(async (tx) => {
        const counts = new StoredCounts()
        const { answered, units } = a.beginConvert(tx, [first.reservation])
        await answered
        expect(await units[0]!.finish(limits, counts)).toEqual({ counted: true })
        await counts.send(tx)
        // Uncommitted: B's hold sees the first unit's row (locked, expired by B's clock, so its
        // tidy leaves it) and the second's (expired, unlocked: tidied), and takes the last unit.
        const taken = await b.reserve({ organizationId: 'org_no_wait', inboxId: 'inb_nw2' }, limits)
        const refused = await b.reserve({ organizationId: 'org_no_wait', inboxId: 'inb_nw3' }, limits)
        return [taken.reserved, refused]
      })
      expect(during).toEqual([true, { reserved: false, refusal: 'monthly_quota_exceeded', limit: 100 }])
      // Committed: 99 stored and B's unit held; A's second unit was tidied with its lease.
      expect(await stored('org_no_wait')).toBe(99)
      expect(await b.reserve({ organizationId: 'org_no_wait', inboxId: 'inb_nw4' }, limits)).toEqual({
        reserved: false,
        refusal: 'monthly_quota_exceeded',
        limit: 100,
      })
    } finally {
      await impatient.end()
    }
  })

  test('a refused hold writes no row, and a hold that fails leaves its connection usable with nothing held', async () => {
    await newOrganization('org_one_trip', 99)
    const rows = async () =>
      Number(
        (
          await machineA<
            { n: string }[]
          >`select count(*) as n from quota_reservations where organization_id = 'org_one_trip'`
        )[0]!.n,
      )
    // A pool of one: a connection a hold kept (or left inside its transaction) would stall the next.
    const single = openPostgres(url, { max: 1, statementTimeoutMs: 300 })
    try {
      const q = createQuotaReservations(single, { holder: 'machine-single', clock })
      const limits = { ...roomy, monthlyEmails: 100 }
      expect((await q.reserve({ organizationId: 'org_one_trip', inboxId: 'inb_1' }, limits)).reserved).toBe(true)
      expect(await q.reserve({ organizationId: 'org_one_trip', inboxId: 'inb_1' }, limits)).toEqual({
        reserved: false,
        refusal: 'monthly_quota_exceeded',
        limit: 100,
      })
      expect(await rows()).toBe(1)
      // Another session holds the organisation's lock past the statement timeout: the hold fails.
      const blocker = await machineB.reserve()
      try {
        await blocker`begin`
        await blocker`select pg_advisory_xact_lock(hashtextextended(${'pigeonhole.quota.org_one_trip'}, 0))`
        const failed = await q
          .reserve({ organizationId: 'org_one_trip', inboxId: 'inb_2' }, roomy)
          .catch((error: unknown) => error)
        expect((failed as { code?: string }).code).toBe('57014')
      } finally {
        await blocker`rollback`
        blocker.release()
      }
      expect(await rows()).toBe(1)
      // The connection came back outside any transaction: the next hold commits (seen from another pool).
      expect((await q.reserve({ organizationId: 'org_one_trip', inboxId: 'inb_3' }, roomy)).reserved).toBe(true)
      expect(await rows()).toBe(2)
    } finally {
      await single.end()
    }
  })
  test('holds of one organisation made while its call runs go in one call, answered as if made one after the other', async () => {
    await newOrganization('org_hold_batch')
    await newOrganization('org_hold_other')
    const a = createQuotaReservations(machineA, { holder: 'machine-a', clock })
    const limits = { monthlyEmails: 100, inboxBurst: 4, orgBurst: 1000 }
    // Made in one turn: the first goes alone; the other seven wait for it and go together. The
    // other organisation's does not wait for them.
    const results = await Promise.all([
      ...Array.from({ length: 8 }, () => a.reserve({ organizationId: 'org_hold_batch', inboxId: 'inb_batch' }, limits)),
      a.reserve({ organizationId: 'org_hold_other', inboxId: 'inb_hold_other' }, limits),
    ])
    // In the order made: the first four take the inbox's burst, the rest are refused.
    expect(results.map((r) => r.reserved)).toEqual([true, true, true, true, false, false, false, false, true])
    expect(results[4]).toEqual({ reserved: false, refusal: 'inbox_burst_exceeded', limit: 4 })
    // Two transactions wrote the four rows: the first hold's, and the batch's.
    const [row] = await machineA<{ transactions: string; rows: string }[]>`
      select count(distinct xmin::text) as transactions, count(*) as rows from quota_reservations
      where organization_id = 'org_hold_batch'`
    expect({ transactions: Number(row!.transactions), rows: Number(row!.rows) }).toEqual({ transactions: 2, rows: 4 })
    expect(a.held).toBe(5)
  })

  test('a batched call that fails fails each of its holds and holds nothing; the next call holds again', async () => {
    await newOrganization('org_batch_fail')
    const rows = async () =>
      Number(
        (
          await machineA<
            { n: string }[]
          >`select count(*) as n from quota_reservations where organization_id = 'org_batch_fail'`
        )[0]!.n,
      )
    const single = openPostgres(url, { max: 1, statementTimeoutMs: 300 })
    const blocker = await machineB.reserve()
    try {
      const q = createQuotaReservations(single, { holder: 'machine-single', clock })
      // Another session holds the organisation's lock past the statement timeout: the first
      // hold's call fails, then the batch of the other two.
      await blocker`begin`
      await blocker`select pg_advisory_xact_lock(hashtextextended(${'pigeonhole.quota.org_batch_fail'}, 0))`
      const failed = await Promise.all(
        ['inb_1', 'inb_2', 'inb_3'].map((inboxId) =>
          q.reserve({ organizationId: 'org_batch_fail', inboxId }, roomy).catch((error: unknown) => error),
        ),
      )
      expect(failed.map((error) => (error as { code?: string }).code)).toEqual(['57014', '57014', '57014'])
      await blocker`rollback`
      expect(await rows()).toBe(0)
      const again = await Promise.all(
        ['inb_4', 'inb_5'].map((inboxId) => q.reserve({ organizationId: 'org_batch_fail', inboxId }, roomy)),
      )
      expect(again.map((r) => r.reserved)).toEqual([true, true])
      expect(await rows()).toBe(2)
    } finally {
      blocker.release()
      await single.end()
    }
  })
})

describeWithPostgres("quota reservations' table upkeep", () => {
  test('a machine vacuums the table after as many removals (stored or released) as it is told, so the rows every hold walks stay the live ones', async () => {
    const url = await migratedDatabase()
    const sql = openPostgres(url, { max: 4 })
    const clock = new ManualClock('2026-03-10T10:02:30.000Z')
    const roomy = { monthlyEmails: 1000, inboxBurst: 1000, orgBurst: 1000 }
    try {
      await sql`insert into organizations (id, name, created_at) values ('org_upkeep', 'upkeep', ${new Date(clock.now()).toISOString()})`
      // A table never vacuumed nor analysed has no row estimate: -1 until the first vacuum sets it.
      const estimate = async () =>
        Number(
          (await sql<{ n: number }[]>`select reltuples as n from pg_class where relname = 'quota_reservations'`)[0]!.n,
        )
      expect(await estimate()).toBe(-1)
      const q = createQuotaReservations(sql, { holder: 'machine-upkeep', clock, vacuumAfter: 40 })
      const held: QuotaReservation[] = []
      for (let i = 0; i < 50; i++) {
        const r = await q.reserve({ organizationId: 'org_upkeep', inboxId: `inb_${i % 5}` }, roomy)
        if (!r.reserved) throw new Error('refused with room')
        held.push(r.reservation)
      }
      // 20 stored (converted by their storing transactions), 19 released: one short of 40.
      for (const reservation of held.slice(0, 20)) await sql.begin((tx) => q.convert(tx, reservation, roomy))
      for (const reservation of held.slice(20, 39)) await q.release(reservation)
      // The sleep is the window in which a vacuum asked for too early would have shown.
      await Bun.sleep(200)
      expect(await estimate()).toBe(-1)
      // The 40th removal asks for the vacuum; it runs in the background.
      await q.release(held[39]!)
      await until(async () => (await estimate()) >= 0, 'the vacuum of quota_reservations', { timeoutMs: 10_000 })
      expect(await estimate()).toBe(10)
    } finally {
      await sql.end()
    }
  })
})
