/**
 * `cli db copy --to <url>`: a team's SQLite file copied into an empty PostgreSQL database by
 * the CLI as a real process, against a real server's file and a real PostgreSQL (one that
 * asks for a password with a space in it, for the URL forms users write).
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { openPostgres, type Sql } from '../../src/storage/postgres/client.ts'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { newInbox } from '../support/messages.ts'
import { copiedTables } from '../../src/storage/postgres/copy-from-sqlite.ts'
import { describeWithPostgres, freshDatabase, ownCluster } from '../support/postgres.ts'
import { sendMail, simpleMessage } from '../support/smtp.ts'

setDefaultTimeout(60_000)

const ROOT = join(import.meta.dir, '..', '..')

async function cli(databasePath: string, ...args: string[]) {
  const child = Bun.spawn(['bun', 'src/cli.ts', ...args], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_PATH: databasePath },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ])
  return { code, stdout, stderr }
}

/** The URL with a password, to prove it is never printed. */
const withPassword = (url: string) => url.replace('postgres://postgres@', 'postgres://postgres:not-printed-secret@')

describeWithPostgres('cli db copy', () => {
  let server: TestServer
  let sql: Sql | undefined
  let url: string
  let messageId: string
  let organizationId: string

  beforeAll(async () => {
    server = await startTestServer()
    const tenant = await server.tenant('copied-org')
    organizationId = tenant.organizationId
    const inbox = await newInbox(server, tenant.key)
    const sent = await sendMail(
      server.app.smtpPort,
      { to: [inbox.address] },
      simpleMessage({ to: inbox.address, subject: 'moved over' }),
    )
    expect(sent.data?.code).toBe(250)
    const listed = await server.get(`/v1/inboxes/${inbox.id}/messages`, tenant.key)
    messageId = listed.body.data[0].id
    url = await freshDatabase()
  })
  afterAll(async () => {
    await sql?.end()
    await server.app.stop().catch(() => {})
    rmSync(join(server.databasePath, '..'), { recursive: true, force: true })
  })

  test('a running server is named and nothing is copied', async () => {
    const run = await cli(server.databasePath, 'db', 'copy', '--to', withPassword(url))
    expect(run.code).toBe(1)
    expect(run.stderr).toContain('Another Pigeonhole server')
    sql = openPostgres(url, { max: 1 })
    const tables =
      await sql`select count(*)::int as n from information_schema.tables where table_name = 'organizations'`
    expect(tables[0]!.n).toBe(0) // not even migrated
  })

  test('from the stopped server: every table copied and verified, the password never printed', async () => {
    await server.app.stop()
    const run = await cli(server.databasePath, 'db', 'copy', '--to', withPassword(url))
    expect(run.stderr + run.stdout).not.toContain('not-printed-secret')
    expect(run.code).toBe(0)
    const lines = run.stdout.trimEnd().split('\n')
    expect(lines[0]).toBe('table\trows\tsha256')
    const counts = Object.fromEntries(
      lines
        .slice(1, -1)
        .map((line) => line.split('\t') as [string, string, string])
        .map(([table, rows]) => [table, Number(rows)]),
    )
    expect(counts.organizations).toBe(1)
    expect(counts.messages).toBe(1)
    expect(counts.message_sources).toBe(1)
    expect(lines.at(-1)).toMatch(/^copied and verified \d+ rows into postgres:\/\/postgres@127\.0\.0\.1:\d+\/\w+$/)
    const [message] = await sql!`select subject, organization_id from messages where id = ${messageId}`
    expect(message).toEqual({ subject: 'moved over', organization_id: organizationId })
  })

  test('a second copy into the same database is refused and changes nothing', async () => {
    const run = await cli(server.databasePath, 'db', 'copy', '--to', url)
    expect(run.code).toBe(1)
    expect(run.stderr).toContain('copy refused: the PostgreSQL database is not empty')
    const [{ n }] = (await sql!`select count(*)::int as n from organizations`) as unknown as [{ n: number }]
    expect(n).toBe(1)
  })

  test('a URL that is not PostgreSQL gets the usage line; an unreachable server a clear failure', async () => {
    const wrong = await cli(server.databasePath, 'db', 'copy', '--to', 'mysql://x@localhost/db')
    expect(wrong.code).toBe(64)
    expect(wrong.stderr).toContain('db copy --to postgres://user:password@host')
    const unreachable = await cli(server.databasePath, 'db', 'copy', '--to', 'postgres://u:hidden-pw@127.0.0.1:1/none')
    expect(unreachable.code).toBe(1)
    expect(unreachable.stderr).toContain('copy failed, nothing was kept in postgres://u@127.0.0.1:1/none')
    expect(unreachable.stderr).not.toContain('hidden-pw')
  })
})

describeWithPostgres('cli db copy: a password with a space, and progress', () => {
  let cluster: ReturnType<typeof ownCluster>
  let server: TestServer
  const password = 'two words'

  beforeAll(async () => {
    cluster = ownCluster({ password })
    server = await startTestServer()
    for (let i = 0; i < 11; i++) await server.tenant(`org ${i}`) // 22 audit events: ids past 9 compare as numbers
    await server.app.stop()
  })
  afterAll(() => {
    cluster.stop()
    rmSync(join(server.databasePath, '..'), { recursive: true, force: true })
  })

  test('the password works written raw or percent-encoded, and is never printed', async () => {
    const encoded = await freshDatabase(cluster) // the cluster's URLs carry the password as %20
    expect(encoded).toContain('two%20words@')
    const raw = (await freshDatabase(cluster)).replace('two%20words@', 'two words@')
    for (const url of [encoded, raw]) {
      const run = await cli(server.databasePath, 'db', 'copy', '--to', url)
      expect(run.stderr + run.stdout).not.toContain('two')
      expect({ code: run.code, stderr: run.stderr }).toMatchObject({ code: 0 })
      expect(run.stdout).toContain('\naudit_events\t22\t')
    }
    // A wrong password is the database's refusal, not the usage text.
    const wrong = await cli(server.databasePath, 'db', 'copy', '--to', raw.replace('two words@', 'three words@'))
    expect(wrong.code).toBe(1)
    expect(wrong.stderr).toContain('copy failed, nothing was kept in postgres://postgres@127.0.0.1:')
    expect(wrong.stderr).toContain('password authentication failed')
    expect(wrong.stderr).not.toContain('words')
  })

  test('progress lines name each verified table, with rows, bytes and a rate; a summary closes', async () => {
    const run = await cli(server.databasePath, 'db', 'copy', '--to', await freshDatabase(cluster))
    expect(run.code).toBe(0)
    const lines = run.stderr.split('\n')
    expect(lines).toContainEqual(
      expect.stringMatching(
        /^verified organizations: 11 rows; \d+ of \d+ rows \(\d+%\), \d+\.\d MB in \d+\.\d s, [\d,]+ rows\/s, \d+\.\d MB\/s$/,
      ),
    )
    expect(lines.filter((line) => line.startsWith('verified '))).toHaveLength(copiedTables().length)
    expect(lines).toContainEqual(
      expect.stringMatching(
        /^done: (\d+) of \1 rows \(100%\), \d+\.\d MB in \d+\.\d s, [\d,]+ rows\/s, \d+\.\d MB\/s, \d+ insert statements$/,
      ),
    )
  })

  test('a URL the client would misread is refused saying what to encode, without the password', async () => {
    const run = await cli(
      server.databasePath,
      'db',
      'copy',
      '--to',
      `postgres://postgres:sla/sh-secret@127.0.0.1:${cluster.port}/postgres`,
    )
    expect(run.code).toBe(64)
    expect(run.stderr).toContain("percent-encode '/', '?' and '#' in the user name and password")
    expect(run.stderr).not.toContain('sh-secret')
  })
})
