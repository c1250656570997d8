/**
 * A start in PostgreSQL mode checks that DATABASE_URL keeps a session per connection (a LISTEN
 * hears a NOTIFY; a session advisory lock excludes another connection and is still its
 * owner's at the next statement) and refuses to go on, with one line, when it does not. The
 * failure is reproduced with a real PgBouncer in transaction mode (the pooler and mode an
 * operator is likely to pick); the same PgBouncer in session mode, and a direct connection,
 * pass.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { join } from 'node:path'
import postgres from 'postgres'
import { checkSessionSemantics, SessionNotKeptError } from '../../src/storage/postgres/session-check.ts'
import { ROOT } from '../support/entry-process.ts'
import { describeWithPgBouncer, type Pooler, startPgBouncer } from '../support/pgbouncer.ts'
import { freshDatabase, testCluster } from '../support/postgres.ts'
import { scratchDir } from '../support/scratch.ts'

setDefaultTimeout(30_000)

/** `bun src/index.ts` on `databaseUrl`; killed if it is still running after 20 s. */
async function startServer(databaseUrl: string) {
  const dir = scratchDir('pigeonhole-session-check-')
  const child = Bun.spawn([process.execPath, 'src/index.ts'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: dir,
      HOST: '127.0.0.1',
      PORT: '0',
      SMTP_PORT: '0',
      DATABASE_PATH: join(dir, 'pigeonhole.db'),
      DATABASE_URL: databaseUrl,
    },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const guard = setTimeout(() => child.kill('SIGKILL'), 20_000)
  const [code, stdout, stderr] = await Promise.all([
    child.exited,
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
  ])
  clearTimeout(guard)
  return { code, lines: (stdout + stderr).trim().split('\n') }
}

async function tablesIn(url: string): Promise<number> {
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  try {
    const [row] = await sql<
      { n: number }[]
    >`select count(*)::int as n from information_schema.tables where table_schema in ('public', 'drizzle')`
    return row?.n ?? -1
  } finally {
    await sql.end()
  }
}

describeWithPgBouncer('the session check at start', () => {
  let transaction: Pooler
  let session: Pooler
  beforeAll(async () => {
    ;[transaction, session] = await Promise.all([
      startPgBouncer(testCluster(), 'transaction'),
      startPgBouncer(testCluster(), 'session'),
    ])
  })
  afterAll(() => {
    transaction?.stop()
    session?.stop()
  })

  test('a direct connection and a session-mode pooler keep sessions', async () => {
    const database = (await freshDatabase()).split('/').at(-1)!
    await checkSessionSemantics(testCluster().url(database))
    await checkSessionSemantics(session.url(database))
  })

  test('a transaction-mode pooler does not: the check names what failed', async () => {
    const database = (await freshDatabase()).split('/').at(-1)!
    const failure = await checkSessionSemantics(transaction.url(database), 1_000).catch((error: unknown) => error)
    expect(failure).toBeInstanceOf(SessionNotKeptError)
    // PgBouncer hands the next statement the server connection used last, so the other
    // connection's try lands in the owner's session; on a busier pool it may land elsewhere and
    // the owner's unlock then finds the lock gone. Either way the lock check fails too.
    expect((failure as SessionNotKeptError).problem).toMatch(
      /^a NOTIFY sent through it did not reach a LISTEN on it within 1 s; a session advisory lock (held by one connection was granted to another|was no longer held by its own connection at its next statement)$/,
    )
  })

  test('a server started through a transaction-mode pooler exits 78 with one line, before migrating anything', async () => {
    const database = (await freshDatabase()).split('/').at(-1)!
    const url = transaction.url(database)
    const { code, lines } = await startServer(url)
    const said = lines.filter((line) => !line.startsWith('{'))
    expect(said).toHaveLength(1)
    expect(said[0]).toStartWith(
      `Invalid configuration: DATABASE_URL: ${url} does not keep a session per connection (a NOTIFY sent through it did not reach a LISTEN on it within 3 s; a session advisory lock `,
    )
    expect(said[0]).toEndWith(
      '). LISTEN/NOTIFY and session advisory locks need a direct connection or a pooler in session mode, not transaction mode (docs/scaling.md, "Connections and poolers").',
    )
    expect(code).toBe(78)
    expect(await tablesIn(testCluster().url(database))).toBe(0)
  })
})
