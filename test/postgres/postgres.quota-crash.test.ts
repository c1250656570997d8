/**
 * A quota hold commits without waiting for its flush
 * (`drizzle/postgres/0005_quota_hold_function.sql`), so a database crash can lose it; the
 * store's commit is flushed before its `250`. On a cluster of its own,
 * stopped at once as a crash stops it (shared memory, the WAL not yet written, gone), with the
 * WAL writer slowed so that an unflushed hold stays unwritten until the crash:
 * - a hold the crash lost frees its unit; the store that meets its row gone checks the counts
 *   again, so the unit is counted once, never twice (no over-admission);
 * - a store's flushed commit takes every hold committed before it along (WAL is written in
 *   order): a stored message and the holds made before it outlive the crash.
 * Either way nothing acknowledged is lost. PostgreSQL's asynchronous commit:
 * https://www.postgresql.org/docs/15/wal-async-commit.html
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { ManualClock } from '../../src/clock.ts'
import { openPostgres, type Sql } from '../../src/storage/postgres/client.ts'
import { createQuotaReservations } from '../../src/storage/postgres/quota-reservations.ts'
import { describeWithPostgres, migratedDatabase, ownCluster, type TestCluster } from '../support/postgres.ts'

setDefaultTimeout(60_000)

describeWithPostgres('quota holds across a database crash', () => {
  let cluster: TestCluster
  let url: string
  let machine: Sql
  const clock = new ManualClock('2026-03-10T10:02:30.000Z')
  const limits = { monthlyEmails: 100, inboxBurst: 1000, orgBurst: 1000 }

  beforeAll(async () => {
    cluster = ownCluster()
    url = await migratedDatabase(cluster)
    const admin = openPostgres(url, { max: 1 })
    try {
      // The WAL writer writes unflushed commits every wal_writer_delay (200 ms by default):
      // slowed, a hold is still only in shared memory when the test stops the server.
      await admin`alter system set wal_writer_delay = '10s'`
      await admin`select pg_reload_conf()`
    } finally {
      await admin.end()
    }
    machine = openPostgres(url, { max: 2 })
  })
  afterAll(async () => {
    await machine?.end()
    cluster?.stop()
  })

  /** The crash: the server stopped at once and started again; a new pool, as a machine's reconnects. */
  const crash = async () => {
    cluster.restart()
    await machine.end({ timeout: 0 })
    machine = openPostgres(url, { max: 2 })
  }
  const newOrganization = (id: string, received: number) =>
    machine.begin(async (tx) => {
      await tx`insert into organizations (id, name, created_at) values (${id}, ${id}, ${new Date(clock.now()).toISOString()})`
      await tx`insert into monthly_email_usage (organization_id, month, received) values (${id}, '2026-03', ${received})`
    })
  const count = async (query: Promise<{ n: string }[]>) => Number((await query)[0]!.n)
  const stored = (org: string) =>
    count(machine`select received::text as n from monthly_email_usage where organization_id = ${org}`)
  const holds = (org: string) =>
    count(machine`select count(*) as n from quota_reservations where organization_id = ${org}`)

  test('a hold the crash lost is checked again by its store: the last unit counted once, never twice', async () => {
    await newOrganization('org_lost', 99)
    const a = createQuotaReservations(machine, { holder: 'machine-a', clock })
    const first = await a.reserve({ organizationId: 'org_lost', inboxId: 'inb_1' }, limits)
    if (!first.reserved) throw new Error('expected the last unit')
    await crash()
    // The crash took the unflushed hold: its unit is free again.
    expect(await holds('org_lost')).toBe(0)
    const b = createQuotaReservations(machine, { holder: 'machine-b', clock })
    const second = await b.reserve({ organizationId: 'org_lost', inboxId: 'inb_2' }, limits)
    if (!second.reserved) throw new Error('expected the freed unit')
    // The first message's store (its SMTP transaction outlived the crash) finds its row gone,
    // counts again, and is refused: its sender hears a refusal, not a 250.
    expect(await machine.begin((tx) => a.convert(tx, first.reservation, limits))).toEqual({
      counted: false,
      refusal: 'monthly_quota_exceeded',
      limit: 100,
    })
    expect(await machine.begin((tx) => b.convert(tx, second.reservation, limits))).toEqual({ counted: true })
    expect(await stored('org_lost')).toBe(100)
  })

  test("a store's flushed commit keeps its message counted and the holds made before it, across a crash", async () => {
    await newOrganization('org_kept', 10)
    const a = createQuotaReservations(machine, { holder: 'machine-a', clock })
    const [first, second] = await Promise.all(
      ['inb_1', 'inb_2'].map((inboxId) => a.reserve({ organizationId: 'org_kept', inboxId }, limits)),
    )
    if (!first?.reserved || !second?.reserved) throw new Error('expected two units')
    // The first message is stored (its commit flushed, as before any `250`); the second is still
    // in its SMTP transaction when the database crashes.
    expect(await machine.begin((tx) => a.convert(tx, first.reservation, limits))).toEqual({ counted: true })
    await crash()
    expect(await stored('org_kept')).toBe(11)
    // The second hold, committed unflushed before that store, was written with it.
    expect(await holds('org_kept')).toBe(1)
    expect(await machine.begin((tx) => a.convert(tx, second.reservation, limits))).toEqual({ counted: true })
    expect({ stored: await stored('org_kept'), holds: await holds('org_kept') }).toEqual({ stored: 12, holds: 0 })
  })
})
