/**
 * Values go through Drizzle's PostgreSQL driver and come back as the core expects them:
 * RFC 3339 timestamps (the schema's `at` columns read back through rfc3339FromPostgres), bytes as Buffers, sizes as numbers, the
 * operator flag as a boolean, audit ids in insertion order, and cascades as in SQLite.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/postgres-js'
import { openPostgres, type Sql } from '../../src/storage/postgres/client.ts'
import * as schema from '../../src/storage/postgres/schema.ts'
import { rfc3339FromPostgres } from '../../src/storage/postgres/time.ts'
import { describeWithPostgres, migratedDatabase } from '../support/postgres.ts'

setDefaultTimeout(60_000)

describeWithPostgres('values through the PostgreSQL schema', () => {
  let sql: Sql
  let db: ReturnType<typeof drizzle<typeof schema>>

  beforeAll(async () => {
    sql = openPostgres(await migratedDatabase(), { max: 2 })
    db = drizzle(sql, { schema })
  })
  afterAll(async () => {
    await sql.end()
  })

  test('timestamps, bytes, sizes and flags come back as the core wrote them', async () => {
    const times = ['2026-01-15T12:00:00.000Z', '2026-01-15T12:00:00.120Z', '2026-12-31T23:59:59.999Z']
    await db.insert(schema.organizations).values({ id: 'org_1', name: 'Acme', createdAt: times[0]! })
    await db.insert(schema.inboxes).values({
      id: 'inbox_1',
      organizationId: 'org_1',
      localPart: 'a',
      address: 'a@x.test',
      state: 'active',
      createdAt: times[1]!,
    })
    const raw = Buffer.from([0, 1, 2, 255, 13, 10, 0x80])
    const big = 5 * 2 ** 32 // past 32 bits
    await db.insert(schema.messages).values({
      id: 'msg_1',
      inboxId: 'inbox_1',
      organizationId: 'org_1',
      fromName: '',
      fromAddress: 'a@b.test',
      toAddress: 'a@x.test',
      subject: 'Ünïcødé ✓',
      preview: '',
      sizeBytes: big,
      receivedAt: times[2]!,
      expiresAt: times[2]!,
      searchSubject: '',
      searchSender: '',
      searchSenderDomain: '',
    })
    await db.insert(schema.messageSources).values({ messageId: 'msg_1', raw, sha256: null })
    await db
      .insert(schema.users)
      .values({ id: 'user_1', email: 'op@x.test', passwordHash: 'h', isOperator: true, createdAt: times[0]! })

    const [org] = await db.select().from(schema.organizations)
    const [inbox] = await db.select().from(schema.inboxes)
    const [message] = await db.select().from(schema.messages)
    const [source] = await db.select().from(schema.messageSources)
    const [user] = await db.select().from(schema.users)
    expect([org!.createdAt, inbox!.createdAt, message!.receivedAt]).toEqual(times)
    expect(message!.sizeBytes).toBe(big)
    expect(message!.subject).toBe('Ünïcødé ✓')
    expect(Buffer.from(source!.raw).equals(raw)).toBe(true)
    expect(user!.isOperator).toBe(true)
    // A filter by time given in the core's form finds the row: PostgreSQL compares instants.
    const newer = await db
      .select({ id: schema.messages.id })
      .from(schema.messages)
      .where(eq(schema.messages.receivedAt, '2026-12-31T23:59:59.999Z'))
    expect(newer).toEqual([{ id: 'msg_1' }])

    // Deleting the inbox takes its messages and their sources with it, as in SQLite.
    await db.delete(schema.inboxes).where(eq(schema.inboxes.id, 'inbox_1'))
    expect(await db.select().from(schema.messageSources)).toEqual([])
  })

  test('audit ids follow insertion order', async () => {
    const at = '2026-01-15T12:00:00.000Z'
    const base = { organizationId: null, actor: 'cli', target: 't', clientAddress: '', createdAt: at }
    await db.insert(schema.auditEvents).values([
      { ...base, action: 'first' },
      { ...base, action: 'second' },
    ])
    const rows = await db
      .select({ id: schema.auditEvents.id, action: schema.auditEvents.action })
      .from(schema.auditEvents)
      .orderBy(schema.auditEvents.id)
    expect(rows.map((r) => r.action)).toEqual(['first', 'second'])
    expect(typeof rows[0]!.id).toBe('number')
  })

  test('rfc3339FromPostgres refuses anything but a UTC timestamp', () => {
    expect(rfc3339FromPostgres('2026-01-15 12:00:00+00')).toBe('2026-01-15T12:00:00.000Z')
    expect(rfc3339FromPostgres('2026-01-15 12:00:00.5+00')).toBe('2026-01-15T12:00:00.500Z')
    expect(() => rfc3339FromPostgres('2026-01-15 12:00:00+02')).toThrow()
    expect(() => rfc3339FromPostgres('2026-01-15T12:00:00Z')).toThrow()
  })
})
