/**
 * A smaller instance of scripts/year-of-use.ts's database (the same shape: CLI, console, API
 * and SMTP through a real server process, every awkward character, revoked keys, a removed
 * member, live sessions, custom limits, past the single digits of audit ids) copied by
 * `cli db copy` in one command with progress, then served by a PostgreSQL server exactly as
 * the SQLite server served it. The full 10,000-message run and its figures: docs/scaling.md.
 */
import { Database } from 'bun:sqlite'
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { makeYearOfUse, type YearOfUse } from '../../scripts/year-of-use/generate.ts'
import { startApp } from '../../src/app.ts'
import { loadConfig } from '../../src/config.ts'
import { createLogger } from '../../src/log.ts'
import { describeWithPostgres, freshDatabase } from '../support/postgres.ts'
import { scratchDir } from '../support/scratch.ts'
import { layDownSelfSigned } from '../support/tls-seed.ts'

setDefaultTimeout(180_000)

const ROOT = join(import.meta.dir, '..', '..')

/** Every inbox's list and every message in full, as the API serves them (download links made host-free). */
async function everything(baseUrl: string, year: YearOfUse): Promise<unknown[]> {
  const out: unknown[] = []
  for (const inbox of year.inboxes) {
    const key = year.keys[inbox.organizationId]!
    const get = async (path: string) => {
      const response = await fetch(`${baseUrl}${path}`, { headers: { authorization: `Bearer ${key}` } })
      expect(response.status).toBe(200)
      return JSON.parse((await response.text()).replace(/http:\/\/(localhost|127\.0\.0\.1):\d+/g, 'BASE'))
    }
    const list = await get(`/v1/inboxes/${inbox.id}/messages?limit=100`)
    out.push(list)
    for (const { id } of list.data as { id: string }[]) out.push(await get(`/v1/messages/${id}`))
  }
  return out
}

/** A server in this process on the finished file (SQLite) or on the copy (PostgreSQL), read, then stopped. */
async function readWith(year: YearOfUse, databaseUrl: string): Promise<unknown[]> {
  const dir = scratchDir('pigeonhole-year-read-')
  const databasePath = databaseUrl ? join(dir, 'unused.db') : year.databasePath
  await layDownSelfSigned(databasePath, 'year.test')
  const config = loadConfig({
    ...year.env,
    DATABASE_PATH: databasePath,
    DATABASE_URL: databaseUrl,
    PORT: '0',
    SMTP_PORT: '0',
    HOST: '127.0.0.1',
  })
  const app = await startApp({ config, logger: createLogger('error', () => {}) })
  try {
    return await everything(app.httpUrl, year)
  } finally {
    await app.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

describeWithPostgres('a database shaped like a year of use, moved in one command', () => {
  let dir: string
  let year: YearOfUse
  let served: unknown[]

  beforeAll(async () => {
    dir = scratchDir('pigeonhole-year-')
    year = await makeYearOfUse(dir, {
      messages: 24,
      auditEvents: 60,
      attachmentBytes: 1024,
      inboxes: 4,
      connections: 2,
      cliOrganizations: 1,
    })
    served = await readWith(year, '')
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  test('the generator made the shape it promises', () => {
    const db = new Database(year.databasePath, { readonly: true })
    const one = (sql: string) => Object.values(db.query(sql).get() as Record<string, number>)[0]
    try {
      expect(year.rows.messages).toBe(24)
      expect(year.rows.attachments).toBe(24)
      expect(year.rows.audit_events).toBeGreaterThanOrEqual(60)
      expect(one('select count(*) from api_keys where revoked_at is not null')).toBeGreaterThan(20) // one by the CLI, the rest in the console
      expect(one("select count(*) from audit_events where action = 'key.revoked' and actor = 'cli'")).toBe(1)
      expect(one("select count(*) from audit_events where action = 'member.removed'")).toBe(1)
      expect(one('select count(*) from organizations where limit_inbox_burst is not null')).toBe(2)
      expect(one('select count(*) from sessions')).toBeGreaterThanOrEqual(3)
      expect(one('select count(*) from invites where used_at is null')).toBe(1)
      expect(
        one(
          "select count(*) from messages where instr(subject, char(0)) > 0 and instr(subject, char(65535) || '0') > 0",
        ),
      ).toBe(24)
      expect(
        one('select count(*) from organizations where instr(name, char(128512)) > 0 and instr(name, char(65535)) > 0'),
      ).toBe(2)
      expect(one('select count(*) from api_keys where instr(name, char(65533)) > 0')).toBe(1) // sent as bytes that are not UTF-8
    } finally {
      db.close()
    }
  })

  test('copied and verified by `cli db copy` with progress, then served the same by PostgreSQL', async () => {
    const url = await freshDatabase()
    const child = Bun.spawn(['bun', 'src/cli.ts', 'db', 'copy', '--to', url], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_PATH: year.databasePath },
      stdout: 'pipe',
      stderr: 'pipe',
    })
    const [stdout, stderr, code] = await Promise.all([
      new Response(child.stdout).text(),
      new Response(child.stderr).text(),
      child.exited,
    ])
    expect({ code, stderr }).toMatchObject({ code: 0 })
    const copied = Object.fromEntries(
      stdout
        .trimEnd()
        .split('\n')
        .slice(1, -1)
        .map((line) => line.split('\t'))
        .map(([table, rows]) => [table, Number(rows)]),
    )
    expect(copied).toEqual(year.rows)
    expect(stderr).toContain(`verified audit_events: ${year.rows.audit_events} rows;`)
    expect(stderr).toMatch(/\ndone: [\d,]+ of [\d,]+ rows \(100%\), [\d.]+ MB in [\d.]+ s, [\d,]+ rows\/s/)
    expect(await readWith(year, url)).toEqual(served)
  })
})
