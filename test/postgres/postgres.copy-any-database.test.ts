/**
 * `db copy` on what real databases hold: more than nine audit events (ids compared in numeric
 * order, not as text), mail text with NUL, bytes that are not UTF-8, U+FFFF (alone and
 * followed by the digits of PostgreSQL mode's own escape) and 4-byte characters, which must
 * read back through the API exactly as the SQLite server served them; a refusal that names
 * the table and the row's key; and progress reported as the copy goes.
 */
import { Database } from 'bun:sqlite'
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { awkwardMessage } from '../../scripts/year-of-use/awkward-mail.ts'
import { startApp } from '../../src/app.ts'
import { createLogger } from '../../src/log.ts'
import { openPostgres, type Sql } from '../../src/storage/postgres/client.ts'
import {
  CopyMismatch,
  type CopyProgress,
  copiedTables,
  copyFromSqlite,
  RowRefused,
} from '../../src/storage/postgres/copy-from-sqlite.ts'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { deliver, newInbox, ROOMY_LIMITS } from '../support/messages.ts'
import { describeWithPostgres, migratedDatabase } from '../support/postgres.ts'
import { scratchDir } from '../support/scratch.ts'
import { layDownSelfSigned } from '../support/tls-seed.ts'

setDefaultTimeout(120_000)

interface Answers {
  list: unknown
  messages: unknown[]
  attachments: string[]
}

/** What the API serves for the inbox: its list, every message in full, every attachment's bytes (hex). */
async function readThroughApi(baseUrl: string, key: string, inboxId: string): Promise<Answers> {
  const get = async (path: string) => {
    const response = await fetch(`${baseUrl}${path}`, { headers: { authorization: `Bearer ${key}` } })
    expect(response.status).toBe(200)
    return response
  }
  // Download links carry the serving machine's address; the rest must be identical.
  const local = (text: string) => JSON.parse(text.replace(/http:\/\/(localhost|127\.0\.0\.1):\d+/g, 'BASE'))
  const list = local(await (await get(`/v1/inboxes/${inboxId}/messages?limit=100`)).text())
  const messages: unknown[] = []
  const attachments: string[] = []
  for (const summary of list.data as { id: string }[]) {
    const message = local(await (await get(`/v1/messages/${summary.id}`)).text())
    messages.push(message)
    for (const a of message.data.attachments as { id: string }[])
      attachments.push(Buffer.from(await (await get(`/v1/attachments/${a.id}`)).arrayBuffer()).toString('hex'))
  }
  return { list, messages, attachments }
}

const countAll = async (sql: Sql) => {
  let total = 0
  for (const table of copiedTables())
    total += (await sql.unsafe(`select count(*)::int as n from "${table.name}"`))[0]!.n
  return total
}

/** A copy of the closed source file, changed by `change` behind the server's back. */
function tampered(source: string, change: (db: Database) => void): string {
  const path = join(scratchDir('pigeonhole-copy-any-'), 'tampered.db')
  const db = new Database(source)
  db.run(`VACUUM INTO '${path}'`)
  db.close()
  const writable = new Database(path)
  writable.run('pragma foreign_keys = off')
  change(writable)
  writable.close()
  return path
}

describeWithPostgres('db copy on any real database', () => {
  let server: TestServer
  let key: string
  let inboxId: string
  let organizationId: string
  let before: Answers

  beforeAll(async () => {
    server = await startTestServer({ env: ROOMY_LIMITS })
    // Two audit events per organisation (created, key created): twelve, past the single digits.
    for (let i = 0; i < 6; i++) ({ key, organizationId } = await server.tenant(`org ${i} ￿ 😀`))
    const inbox = await newInbox(server, key, 'awkward')
    inboxId = inbox.id
    for (let n = 0; n < 3; n++) await deliver(server, inbox.address, awkwardMessage(inbox.address, n))
    before = await readThroughApi(server.url, key, inboxId)
    await server.app.stop() // the file stays for the copies
  })
  afterAll(() => rmSync(join(server.databasePath, '..'), { recursive: true, force: true }))

  test('the mail really carries NUL, U+FFFF, the escape look-alikes and 4-byte characters', () => {
    const first = (before.messages[0] as { data: Record<string, any> }).data
    for (const text of [first.subject, first.from.name, first.text, first.html, first.attachments[0].filename]) {
      expect(text).toContain('\u0000')
      expect(text).toContain('\uffff0')
      expect(text).toContain('😀')
    }
    expect(first.text).toContain('\ufffd') // the bytes that were not UTF-8
    expect(before.messages).toHaveLength(3)
  })

  test('copied, verified, and served by a PostgreSQL server exactly as the SQLite server served it', async () => {
    const url = await migratedDatabase()
    const sql = openPostgres(url, { max: 2 })
    const seen: CopyProgress[] = []
    try {
      const report = await copyFromSqlite(server.databasePath, sql, { batchRows: 5, onProgress: (p) => seen.push(p) })
      const audit = report.tables.find((t) => t.table === 'audit_events')!
      expect(audit.rows).toBeGreaterThanOrEqual(12)

      // Progress: after every batch and table, rows and bytes only grow, ending at the totals.
      const total = report.tables.reduce((sum, t) => sum + t.rows, 0)
      expect(seen.filter((p) => p.phase === 'copying').length).toBeGreaterThan(
        report.tables.filter((t) => t.rows > 0).length,
      ) // batches of 5 rows
      for (let i = 1; i < seen.length; i++) {
        expect(seen[i]!.rows).toBeGreaterThanOrEqual(seen[i - 1]!.rows)
        expect(seen[i]!.bytes).toBeGreaterThanOrEqual(seen[i - 1]!.bytes)
      }
      expect(seen.at(-1)).toMatchObject({
        phase: 'verified',
        table: 'audit_events',
        rows: total,
        totalRows: total,
        bytes: report.bytes,
      })
      expect(seen.find((p) => p.phase === 'verified' && p.table === 'audit_events')).toMatchObject({
        tableRows: audit.rows,
        tableTotal: audit.rows,
      })
      expect(report.bytes).toBeGreaterThan(3 * 2048)

      const dir = scratchDir('pigeonhole-copy-any-pg-')
      const databasePath = join(dir, 'unused.db')
      await layDownSelfSigned(databasePath, server.config.receivingDomain)
      const app = await startApp({
        config: { ...server.config, databasePath, databaseUrl: url, databasePoolSize: 2 },
        logger: createLogger('error', () => {}),
      })
      try {
        expect(await readThroughApi(app.httpUrl, key, inboxId)).toEqual(before)
      } finally {
        await app.stop()
        rmSync(dir, { recursive: true, force: true })
      }
    } finally {
      await sql.end()
    }
  })

  test('a NUL where PostgreSQL text cannot hold it is refused by table and key, and nothing is kept', async () => {
    const path = tampered(server.databasePath, (db) =>
      db.run("update organizations set name = 'a' || char(0) || 'b' where id = ?", [organizationId]),
    )
    const sql = openPostgres(await migratedDatabase(), { max: 2 })
    try {
      const refused = await copyFromSqlite(path, sql).catch((error: unknown) => error)
      expect(refused).toBeInstanceOf(RowRefused)
      expect((refused as Error).message).toBe(
        `row id=${organizationId} of organizations cannot be copied: name holds a NUL character, which PostgreSQL text cannot hold ("a\\u0000b"); nothing was kept`,
      )
      expect(await countAll(sql)).toBe(0)
    } finally {
      await sql.end()
    }
  })

  test("a row PostgreSQL refuses is named by table and key, with PostgreSQL's reason", async () => {
    const path = tampered(server.databasePath, (db) =>
      db.run(
        "insert into message_contents (message_id, text_body, html_body, headers_json) values ('msg_gone', 'x', null, '[]')",
      ),
    )
    const sql = openPostgres(await migratedDatabase(), { max: 2 })
    try {
      const refused = await copyFromSqlite(path, sql).catch((error: unknown) => error)
      expect(refused).toBeInstanceOf(RowRefused)
      expect((refused as Error).message).toStartWith(
        'row message_id=msg_gone of message_contents cannot be copied: PostgreSQL refused it: ',
      )
      expect((refused as Error).message).toContain('foreign key')
      expect(await countAll(sql)).toBe(0)
    } finally {
      await sql.end()
    }
  })

  test("a value that is not of its column's type is named by row: text for a time, a number out of range", async () => {
    const path = tampered(server.databasePath, (db) =>
      db.run("update organizations set created_at = 'next tuesday' where id = ?", [organizationId]),
    )
    const huge = tampered(server.databasePath, (db) =>
      db.run('update organizations set limit_active_inboxes = 4294967296 where id = ?', [organizationId]),
    )
    const sql = openPostgres(await migratedDatabase(), { max: 2 })
    try {
      const refused = await copyFromSqlite(path, sql).catch((error: unknown) => error)
      expect(refused).toBeInstanceOf(RowRefused)
      expect((refused as Error).message).toBe(
        `row id=${organizationId} of organizations cannot be copied: created_at holds "next tuesday", not a time; nothing was kept`,
      )
      const tooBig = await copyFromSqlite(huge, sql).catch((error: unknown) => error)
      expect((tooBig as Error).message).toBe(
        `row id=${organizationId} of organizations cannot be copied: limit_active_inboxes holds 4294967296, out of range for its PostgreSQL type; nothing was kept`,
      )
      expect(await countAll(sql)).toBe(0)
    } finally {
      await sql.end()
    }
  })

  test('a value that reads back differently names its row, its column and both forms', async () => {
    const path = tampered(server.databasePath, (db) =>
      db.run("update organizations set created_at = '2026-03-10T09:00:00Z' where id = ?", [organizationId]),
    )
    const sql = openPostgres(await migratedDatabase(), { max: 2 })
    try {
      const failed = await copyFromSqlite(path, sql).catch((error: unknown) => error)
      expect(failed).toBeInstanceOf(CopyMismatch)
      expect((failed as CopyMismatch).key).toBe(`id=${organizationId}`)
      expect((failed as Error).message).toBe(
        `the copy of organizations differs from the SQLite database (row id=${organizationId}: created_at "2026-03-10T09:00:00Z" reads back as "2026-03-10T09:00:00.000Z"); nothing was kept`,
      )
      expect(await countAll(sql)).toBe(0)
    } finally {
      await sql.end()
    }
  })
})
