/**
 * Which tables could be distributed by organisation (Citus, or one database per shard of
 * organisations behind a router) as they stand, read from a migrated database: a table is
 * keyed by organisation when `organization_id` is in its primary key and in every index.
 * docs/capacity.md ("Past one database") says what each of the others needs and why it is not
 * done yet. The test holds that page true: a new table, or a table that gains or loses
 * `organization_id` in its column list or its keys, fails here until the list below (and the
 * page) say what it is. The list may only move toward "keyed".
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { openPostgres, type Sql } from '../../src/storage/postgres/client.ts'
import { describeWithPostgres, migratedDatabase } from '../support/postgres.ts'

type Status =
  /** organization_id leads or joins the primary key and is in every index. */
  | 'keyed'
  /** Has the column, but its primary key (or an index) does without it. */
  | 'column only'
  /** A tenant's rows without the column: reached through a parent row that has it. */
  | 'through its parent'
  /** Keyed by a subject (an inbox, a key or an organisation id) rather than by organisation. */
  | 'by subject'
  /** Not a tenant's: the organisations themselves, people, process-wide settings. */
  | 'global'

const EXPECTED: Record<string, Status> = {
  // Keyed already.
  monthly_email_usage: 'keyed',
  // The column, in an index, not in the primary key (or an index without it: the sweep's by expiry, a holder's leases, a user's memberships).
  api_keys: 'column only',
  attachments: 'column only',
  audit_events: 'column only',
  idempotency_leases: 'column only',
  idempotency_records: 'column only',
  inboxes: 'column only',
  invites: 'column only',
  link_checks: 'column only',
  memberships: 'column only',
  messages: 'column only',
  quota_reservations: 'column only',
  // Rows of a message or an attachment, keyed by its id.
  attachment_contents: 'through its parent',
  message_contents: 'through its parent',
  message_search_texts: 'through its parent',
  message_sources: 'through its parent',
  // Counters and leases keyed by the id they count for.
  inbound_bursts: 'by subject',
  request_counts: 'by subject',
  slot_leases: 'by subject',
  // Not a tenant's.
  organizations: 'global',
  sessions: 'global',
  settings: 'global',
  sign_in_failures: 'global',
  users: 'global',
}

interface TableFacts {
  table: string
  hasColumn: boolean
  primaryKeyHasIt: boolean
  indexesWithout: number
}

describeWithPostgres('tenant keys', () => {
  let sql: Sql
  let facts: TableFacts[]

  beforeAll(async () => {
    sql = openPostgres(await migratedDatabase(), { max: 1 })
    facts = await sql<TableFacts[]>`
      select c.relname as table,
        exists (select 1 from pg_attribute a where a.attrelid = c.oid and a.attname = 'organization_id' and not a.attisdropped) as "hasColumn",
        exists (select 1 from pg_index i join pg_attribute a on a.attrelid = i.indrelid and a.attnum = any(i.indkey)
                where i.indrelid = c.oid and i.indisprimary and a.attname = 'organization_id') as "primaryKeyHasIt",
        (select count(*)::int from pg_index i where i.indrelid = c.oid and not exists (
          select 1 from pg_attribute a where a.attrelid = i.indrelid and a.attnum = any(i.indkey) and a.attname = 'organization_id')) as "indexesWithout"
      from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = 'public' and c.relkind = 'r' and c.relname not like '\\_\\_drizzle%'
      order by c.relname`
  })
  afterAll(async () => {
    await sql?.end()
  })

  test('every table of the schema is accounted for, tenant or not', () => {
    expect(facts.map((f) => f.table).sort()).toEqual(Object.keys(EXPECTED).sort())
  })

  test('each table is as docs/capacity.md describes it: keyed by organisation, the column only, through its parent, by subject, or global', () => {
    const actual = Object.fromEntries(
      facts.map((f): [string, Status] => {
        const expected = EXPECTED[f.table]
        if (f.hasColumn && f.primaryKeyHasIt && f.indexesWithout === 0) return [f.table, 'keyed']
        if (f.hasColumn) return [f.table, 'column only']
        // Without the column, the three kinds differ by what they hold, not by their shape: the list decides.
        return [
          f.table,
          expected === 'keyed' || expected === 'column only' || expected === undefined
            ? 'through its parent'
            : expected,
        ]
      }),
    )
    expect(actual).toEqual(EXPECTED)
  })
})
