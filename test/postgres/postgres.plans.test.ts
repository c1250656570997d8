/**
 * The plans of the hot path's reads that must not grow with an inbox: each finds an inbox's
 * newest received_at by one descent of messages_by_inbox_newest, reading one index entry
 * however many messages the inbox holds. Run with EXPLAIN ANALYZE on an inbox of 2,000
 * messages (analysed, so the planner knows it), the scan under each subquery must return one
 * row. Ordering the subquery by its own output (the received_at text) read all 2,000 and
 * sorted them, on every store.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { openPostgres, type Sql } from '../../src/storage/postgres/client.ts'
import { INBOXES_FOR_STORE } from '../../src/storage/postgres/store/inbound.ts'
import { NEWEST_PER_INBOX } from '../../src/storage/postgres/wake-bus.ts'
import { textArray } from '../../src/storage/postgres/array-literal.ts'
import { describeWithPostgres, migratedDatabase } from '../support/postgres.ts'

setDefaultTimeout(60_000)

interface PlanNode {
  'Node Type': string
  'Actual Rows': number
  'Parent Relationship'?: string
  'Relation Name'?: string
  Plans?: PlanNode[]
}

/** Every node under a subquery (SubPlan or InitPlan) of `node`. */
function underSubqueries(node: PlanNode, inside = false): PlanNode[] {
  const here = inside || node['Parent Relationship'] === 'SubPlan' || node['Parent Relationship'] === 'InitPlan'
  return [...(here ? [node] : []), ...(node.Plans ?? []).flatMap((child) => underSubqueries(child, here))]
}

describeWithPostgres('plans of the reads that must not grow with an inbox', () => {
  let sql: Sql
  const messages = 2000

  beforeAll(async () => {
    sql = openPostgres(await migratedDatabase(), { max: 1 })
    const at = '2026-03-10T10:00:00.000Z'
    await sql`insert into organizations (id, name, created_at) values ('org_plan', 'plan', ${at})`
    await sql`insert into inboxes (id, organization_id, local_part, address, state, created_at)
      values ('inb_full', 'org_plan', 'full', 'full@plan.test', 'active', ${at}),
             ('inb_other', 'org_plan', 'other', 'other@plan.test', 'active', ${at})`
    await sql`insert into messages (id, inbox_id, organization_id, from_name, from_address, to_address, subject,
        preview, size_bytes, received_at, expires_at, search_subject, search_sender, search_sender_domain)
      select 'msg_' || n, case when n % 10 = 0 then 'inb_other' else 'inb_full' end, 'org_plan', '', 'a@b.test',
        'full@plan.test', 's', '', 100, ${at}::timestamptz + n * interval '1 millisecond',
        ${at}::timestamptz + interval '30 days', 's', 'a@b.test', 'b.test'
      from generate_series(1, ${messages}) as n`
    await sql`analyze messages`
  })
  afterAll(() => sql?.end())

  const explain = async (statement: string, inboxIds: string[]) => {
    const [row] = await sql.unsafe<{ 'QUERY PLAN': [{ Plan: PlanNode }] }[]>(
      `explain (analyze, format json) ${statement}`,
      [textArray(inboxIds)],
    )
    return row!['QUERY PLAN'][0].Plan
  }

  const expectOneEntryPerInbox = (plan: PlanNode) => {
    const scans = underSubqueries(plan).filter((node) => node['Relation Name'] === 'messages')
    expect(scans.length).toBeGreaterThan(0)
    // Actual Rows is per loop: at most one per inbox probed, never the inbox's messages.
    for (const scan of scans) expect(scan['Actual Rows']).toBeLessThanOrEqual(1)
    expect(underSubqueries(plan).map((node) => node['Node Type'])).not.toContain('Sort')
  }

  test("the store's read of its inboxes finds each one's newest message by one index entry", async () => {
    // Inside a transaction: FOR SHARE locks, and the plan is the one the store runs.
    await sql.begin(async (tx) => {
      const [row] = await tx.unsafe<{ id: string; address: string; at: string }[]>(INBOXES_FOR_STORE, [
        textArray(['inb_full']),
      ])
      expect(row).toEqual({ id: 'inb_full', address: 'full@plan.test', at: '2026-03-10 10:00:01.999+00' })
    })
    expectOneEntryPerInbox(await explain(INBOXES_FOR_STORE, ['inb_full', 'inb_other']))
  })

  test("the wake-up fallback's read of the newest message per inbox is one index entry per inbox", async () => {
    const rows = await sql.unsafe<{ id: string; exists: boolean; newest: string | null }[]>(NEWEST_PER_INBOX, [
      textArray(['inb_full', 'inb_other', 'inb_gone']),
    ])
    expect([...rows]).toEqual([
      { id: 'inb_full', exists: true, newest: '2026-03-10 10:00:01.999+00' },
      { id: 'inb_other', exists: true, newest: '2026-03-10 10:00:02+00' },
      { id: 'inb_gone', exists: false, newest: null },
    ])
    expectOneEntryPerInbox(await explain(NEWEST_PER_INBOX, ['inb_full', 'inb_other']))
  })
})
