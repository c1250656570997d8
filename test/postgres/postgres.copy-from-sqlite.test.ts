/**
 * Copying a SQLite database into PostgreSQL. The SQLite side is filled through the real
 * server: setup (operator, organisation, first key, session, audit), an invited member, an
 * organisation and key made as the CLI makes them, inboxes over the API (one with an
 * Idempotency-Key), and mail over SMTP with attachments, one of them large. The copy must
 * carry every table with equal counts and content hashes, in batches, with timestamps that
 * read back as the same RFC 3339 strings and audit ids that continue past the copied ones;
 * refuse a target with rows in it and leave it unchanged; and leave the target empty when
 * anything fails midway (a constraint, or a value that would not round-trip).
 */
import { Database } from 'bun:sqlite'
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { join } from 'node:path'
import { openPostgres, type Sql } from '../../src/storage/postgres/client.ts'
import {
  CopyMismatch,
  copiedTables,
  copyFromSqlite,
  SourceSchemaMismatch,
  TargetNotEmpty,
} from '../../src/storage/postgres/copy-from-sqlite.ts'
import { rfc3339FromPostgres } from '../../src/storage/postgres/time.ts'
import { addMember, setUp } from '../support/console-client.ts'
import { richMessage } from '../support/fixture-mail.ts'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { deliver, newInbox } from '../support/messages.ts'
import { describeWithPostgres, migratedDatabase } from '../support/postgres.ts'
import { scratchDir } from '../support/scratch.ts'
import { simpleMessage } from '../support/smtp.ts'

setDefaultTimeout(120_000)

/** A message with a 600 KB attachment: larger than the small batch budget the test sets. */
function largeMessage(to: string): string {
  const payload = Buffer.from(Array.from({ length: 600_000 }, (_, i) => (i * 31 + 7) % 256)).toString('base64')
  const lines = payload.match(/.{1,76}/g)!.join('\r\n')
  return [
    'From: big@example.com',
    `To: ${to}`,
    'Subject: large',
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="b"',
    '',
    '--b',
    'Content-Type: text/plain',
    '',
    'see attached',
    '--b',
    'Content-Type: application/octet-stream; name="big.bin"',
    'Content-Disposition: attachment; filename="big.bin"',
    'Content-Transfer-Encoding: base64',
    '',
    lines,
    '--b--',
    '',
  ].join('\r\n')
}

const countAll = async (sql: Sql) => {
  const counts: Record<string, number> = {}
  for (const table of copiedTables()) {
    const [row] = await sql.unsafe(`select count(*)::int as n from "${table.name}"`)
    counts[table.name] = row!.n
  }
  return counts
}

describeWithPostgres('copying a SQLite database into PostgreSQL', () => {
  let server: TestServer
  let snapshot: string // a closed copy of the server's database, for the tests that alter it

  beforeAll(async () => {
    server = await startTestServer({ env: { LIMIT_MONTHLY_EMAILS: '1000' } })
    const { client, key, organizationId } = await setUp(server)
    await addMember(server, client, organizationId, 'member@example.com')
    await client.get(`/console/orgs/${organizationId}/members`)
    await client.post(`/console/orgs/${organizationId}/invites`, { role: 'owner' }) // left unused
    const other = await server.tenant('cli-org')
    const inbox = await newInbox(server, key, 'copy')
    const idem = await server.post(
      '/v1/inboxes',
      other.key,
      { prefix: 'idem' },
      { 'idempotency-key': 'copy-idempotency-key-1' },
    )
    expect(idem.status).toBe(201)
    await deliver(server, inbox.address, richMessage(inbox.address))
    await deliver(server, idem.body.data.address, simpleMessage({ to: idem.body.data.address, subject: 'Ünïcødé ✓' }))
    await deliver(server, inbox.address, largeMessage(inbox.address))
    snapshot = join(scratchDir('pigeonhole-copy-'), 'snapshot.db')
    const live = new Database(server.databasePath, { readonly: true })
    live.run(`VACUUM INTO '${snapshot}'`)
    live.close()
  })
  afterAll(async () => {
    await server.stop()
  })

  test('every table is copied from the running server, in batches, with equal counts and hashes', async () => {
    const sql = openPostgres(await migratedDatabase(), { max: 2 })
    try {
      const report = await copyFromSqlite(server.databasePath, sql, { batchRows: 50, batchBytes: 64 * 1024 })
      const source = new Database(server.databasePath, { readonly: true })
      const expected = Object.fromEntries(
        copiedTables().map((t) => [
          t.name,
          (source.query(`select count(*) as n from "${t.name}"`).get() as { n: number }).n,
        ]),
      )
      const auditTimes = source.query('select id, created_at from audit_events order by id').all() as {
        id: number
        created_at: string
      }[]
      const stored = source
        .query('select attachment_id, sha256 from attachment_contents where sha256 is not null order by attachment_id')
        .all()
      source.close()

      expect(Object.fromEntries(report.tables.map((t) => [t.table, t.rows]))).toEqual(expected)
      expect(await countAll(sql)).toEqual(expected)
      for (const table of [
        'organizations',
        'users',
        'api_keys',
        'inboxes',
        'idempotency_records',
        'monthly_email_usage',
        'messages',
        'message_contents',
        'message_search_texts',
        'message_sources',
        'attachments',
        'attachment_contents',
        'sessions',
        'memberships',
        'invites',
        'audit_events',
      ]) {
        expect({ table, filled: expected[table]! > 0 }).toEqual({ table, filled: true })
      }
      // The large message cannot share a 64 KiB batch: more statements than tables.
      expect(report.batches).toBeGreaterThan(copiedTables().length)
      for (const t of report.tables) expect(t.sha256).toMatch(/^[0-9a-f]{64}$/)

      // Timestamps read back as the very strings the core wrote.
      const copiedTimes = await sql<
        { id: string; created_at: string }[]
      >`select id::text, created_at::text from audit_events order by id`
      expect(copiedTimes.map((r) => ({ id: Number(r.id), created_at: rfc3339FromPostgres(r.created_at) }))).toEqual(
        auditTimes,
      )
      // Bytes match the SHA-256 stored beside them.
      const hashed =
        await sql`select attachment_id, encode(sha256(content), 'hex') as sha256 from attachment_contents where sha256 is not null order by attachment_id collate "C"`
      expect([...hashed]).toEqual(stored as never[])
      // The next audit event continues after the copied ones.
      const [next] = await sql<
        { id: string }[]
      >`insert into audit_events (actor, action, target, client_address, created_at)
        values ('cli', 'test', 't', '', now()) returning id::text`
      expect(Number(next!.id)).toBe(auditTimes.at(-1)!.id + 1)
    } finally {
      await sql.end()
    }
  })

  test('a target with rows in it is refused and left unchanged', async () => {
    const sql = openPostgres(await migratedDatabase(), { max: 2 })
    try {
      await sql`insert into settings (name, value) values ('kept', 'as it was')`
      const before = await countAll(sql)
      const refused = await copyFromSqlite(snapshot, sql).catch((error: unknown) => error)
      expect(refused).toBeInstanceOf(TargetNotEmpty)
      expect((refused as TargetNotEmpty).tables).toEqual(['settings'])
      expect(await countAll(sql)).toEqual(before)
      expect([...(await sql`select name, value from settings`)]).toEqual([{ name: 'kept', value: 'as it was' }])
    } finally {
      await sql.end()
    }
  })

  test('a constraint violation midway leaves the target empty', async () => {
    // Content of a message that does not exist: SQLite without foreign keys let it in.
    const broken = join(scratchDir('pigeonhole-copy-'), 'broken.db')
    const db = new Database(snapshot)
    db.run(`VACUUM INTO '${broken}'`)
    db.close()
    const tampered = new Database(broken)
    tampered.run('pragma foreign_keys = off')
    tampered.run(
      "insert into message_contents (message_id, text_body, html_body, headers_json) values ('msg_gone', 'x', null, '[]')",
    )
    tampered.close()

    const sql = openPostgres(await migratedDatabase(), { max: 2 })
    try {
      const failed = await copyFromSqlite(broken, sql).catch((error: unknown) => error)
      expect(String(failed)).toContain('foreign key')
      expect(Object.values(await countAll(sql)).every((n) => n === 0)).toBe(true)
      // And the same database takes a clean copy afterwards.
      const report = await copyFromSqlite(snapshot, sql)
      expect(report.tables.find((t) => t.table === 'messages')!.rows).toBe(3)
    } finally {
      await sql.end()
    }
  })

  test("a crash's leftover staged blobs (no message or attachment owns them) stay behind; the rest copies and verifies", async () => {
    const crashed = join(scratchDir('pigeonhole-copy-'), 'crashed.db')
    const db = new Database(snapshot)
    db.run(`VACUUM INTO '${crashed}'`)
    db.close()
    // What a crash between staging a large message's blobs and committing it leaves.
    const left = new Database(crashed)
    left.run('pragma foreign_keys = off')
    left.run("insert into message_sources (message_id, raw, sha256) values ('msg_never_committed', x'00', null)")
    left.run(
      "insert into attachment_contents (attachment_id, content, sha256) values ('att_never_committed', x'00', null)",
    )
    left.close()
    const sql = openPostgres(await migratedDatabase(), { max: 2 })
    const cleanSql = openPostgres(await migratedDatabase(), { max: 2 })
    try {
      const report = await copyFromSqlite(crashed, sql)
      const clean = await copyFromSqlite(snapshot, cleanSql)
      // The same tables, rows and hashes as the copy of the file without the leftovers.
      expect(report.tables).toEqual(clean.tables)
      const [row] = await sql`select count(*)::int as n from message_sources where message_id = 'msg_never_committed'`
      expect(row!.n).toBe(0)
    } finally {
      await Promise.all([sql.end(), cleanSql.end()])
    }
  })

  test('a timestamp that would not read back the same fails the verification and keeps nothing', async () => {
    const odd = join(scratchDir('pigeonhole-copy-'), 'odd.db')
    const db = new Database(snapshot)
    db.run(`VACUUM INTO '${odd}'`)
    db.close()
    const tampered = new Database(odd)
    tampered.run(
      "update organizations set created_at = '2026-03-10T09:00:00Z' where rowid = (select min(rowid) from organizations)",
    )
    tampered.close()

    const sql = openPostgres(await migratedDatabase(), { max: 2 })
    try {
      const failed = await copyFromSqlite(odd, sql).catch((error: unknown) => error)
      expect(failed).toBeInstanceOf(CopyMismatch)
      expect((failed as CopyMismatch).table).toBe('organizations')
      expect(Object.values(await countAll(sql)).every((n) => n === 0)).toBe(true)
    } finally {
      await sql.end()
    }
  })

  test('a SQLite file of another schema is refused before anything is written', async () => {
    const other = join(scratchDir('pigeonhole-copy-'), 'other.db')
    const db = new Database(snapshot)
    db.run(`VACUUM INTO '${other}'`)
    db.close()
    const altered = new Database(other)
    altered.run("alter table inboxes add column colour text not null default 'blue'")
    altered.run('alter table messages drop column internet_message_id')
    altered.close()

    const sql = openPostgres(await migratedDatabase(), { max: 2 })
    try {
      const refused = await copyFromSqlite(other, sql).catch((error: unknown) => error)
      expect(refused).toBeInstanceOf(SourceSchemaMismatch)
      expect((refused as SourceSchemaMismatch).differences).toEqual([
        'inboxes.colour has no place in PostgreSQL',
        'messages lacks internet_message_id',
      ])
      expect(Object.values(await countAll(sql)).every((n) => n === 0)).toBe(true)
    } finally {
      await sql.end()
    }
  })
})
