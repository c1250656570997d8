/**
 * What the suite makes once and copies (support/postgres.ts, support/harness.ts) must be what
 * making it anew gives, and the shortcuts the test clusters take must be the ones their
 * comments promise: a database copied from the cluster's migrated template holds exactly what
 * migrating an empty one holds, a test server's copied SQLite file has the migrated file's
 * schema and page settings, the clusters skip only what no test can observe (durability of
 * acknowledged commits stays), and ports handed to child processes lie below the ephemeral
 * range that the run's own connections take their local ports from; the parallel run's workers
 * skip JavaScriptCore's top JIT tier (support/parallel-run.ts), unless told otherwise; the machine processes of
 * test/multi/ run a bundle of this run's source (support/machine-bundle.ts) that serves as the
 * source does.
 */
import { Database } from 'bun:sqlite'
import { expect, setDefaultTimeout, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openPostgres } from '../../src/storage/postgres/client.ts'
import { migratePostgres } from '../../src/storage/postgres/migrate.ts'
import { openStorage } from '../../src/storage/sqlite/open.ts'
import { PDF_NAME, richMessage } from '../support/fixture-mail.ts'
import { startTestServer } from '../support/harness.ts'
import { machineScript } from '../support/machine-bundle.ts'
import { machineApi, pgMachine } from '../support/pg-processes.ts'
import { unusedPort } from '../support/ports.ts'
import { describeWithPostgres, freshDatabase, migratedDatabase, testCluster } from '../support/postgres.ts'
import { runOwner } from '../support/run-owner.ts'
import { scratchDir } from '../support/scratch.ts'
import { sendMail } from '../support/smtp.ts'

setDefaultTimeout(60_000)

/** Every table, column, index and function of `url`'s public schema, and the migrations it records. */
async function postgresContents(url: string) {
  const sql = openPostgres(url, { max: 1 })
  try {
    const columns = await sql<{ c: string }[]>`
      select table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable as c
      from information_schema.columns where table_schema = 'public' order by 1`
    const indexes = await sql<{ c: string }[]>`
      select indexdef as c from pg_indexes where schemaname = 'public' order by 1`
    const functions = await sql<{ c: string }[]>`
      select p.proname || '(' || pg_get_function_arguments(p.oid) || ')' as c from pg_proc p
      join pg_namespace n on n.oid = p.pronamespace where n.nspname = 'public' order by 1`
    const migrations = await sql<{ c: string }[]>`select hash as c from drizzle.__drizzle_migrations order by id`
    return [columns, indexes, functions, migrations].map((rows) => rows.map((row) => row.c))
  } finally {
    await sql.end()
  }
}

describeWithPostgres('the test clusters', () => {
  test('a database copied from the migrated template holds what migrating an empty database gives', async () => {
    const migrated = await freshDatabase()
    expect((await migratePostgres(migrated)).applied).toBeGreaterThan(0)
    const copied = await migratedDatabase()
    const [fromCopy, fromMigration] = [await postgresContents(copied), await postgresContents(migrated)]
    expect(fromCopy[0]!.length).toBeGreaterThan(50)
    expect(fromCopy).toEqual(fromMigration)
    // The server's own start on the copy finds nothing left to apply.
    expect((await migratePostgres(copied)).applied).toBe(0)
  })

  test('the run skips what no test observes and keeps every acknowledged commit', async () => {
    const sql = openPostgres(testCluster().url(), { max: 1 })
    try {
      const settings = Object.fromEntries(
        (
          await sql<{ name: string; setting: string }[]>`
            select name, setting from pg_settings where name in
            ('fsync', 'full_page_writes', 'wal_level', 'max_wal_senders', 'autovacuum', 'jit', 'synchronous_commit')`
        ).map((row) => [row.name, row.setting]),
      )
      expect(settings).toEqual({
        fsync: 'off',
        full_page_writes: 'off',
        wal_level: 'minimal',
        max_wal_senders: '0',
        autovacuum: 'off',
        jit: 'off',
        synchronous_commit: 'on',
      })
    } finally {
      await sql.end()
    }
  })
})

describeWithPostgres("the run's machine bundle", () => {
  test("test/multi/'s machines run one file built from this run's source, which serves as the source does", async () => {
    const script = await machineScript()
    // Named after this run, so never a bundle left by an earlier run of older source; built once.
    expect(script).toContain(`-${runOwner().key}/`)
    expect(await machineScript()).toBe(script)
    // One file: no import of a source file, which a machine would transpile at every start.
    expect(readFileSync(script, 'utf8')).not.toMatch(/\b(from|import)\s*\(?\s*["'][^"']*\.tsx?["']/)

    const machine = pgMachine('bundled', await migratedDatabase())
    const server = await startTestServer()
    try {
      // Started: it found the migrations beside the bundle (as dist/server.js does) and made a tenant.
      await machine.start({ PG_MACHINE_TENANTS: 'hosted:1' })
      const key = machine.tenants[0]!.keys[0]!
      // The same interface as the source's, route for route.
      const published = (await machineApi(machine, 'GET', '/openapi/json')).body
      expect(published.paths).toEqual((await server.get('/openapi/json')).body.paths)
      // A multipart message goes to the parse worker, which the machine finds beside the bundle.
      const inbox = (await machineApi(machine, 'POST', '/v1/inboxes', key)).body.data
      const sent = await sendMail(machine.smtp, { to: [inbox.address] }, richMessage(inbox.address))
      expect(sent.data?.code, machine.output()).toBe(250)
      const listed = await machineApi(
        machine,
        'GET',
        `/v1/inboxes/${inbox.id}/messages?wait_seconds=30&include=content&limit=1`,
        key,
      )
      expect(listed.body.data[0].subject).toBe('Grüße aus Zürich')
      expect(listed.body.data[0].attachments.map((a: { filename: string }) => a.filename)).toContain(PDF_NAME)
    } finally {
      await Promise.all([machine.remove(), server.stop()])
    }
  })
})

test("a test server's SQLite file has what the server's own migration of an empty file gives", async () => {
  const server = await startTestServer()
  try {
    const own = join(scratchDir('pigeonhole-setup-check-'), 'pigeonhole.db')
    openStorage(own).close()
    const read = (path: string) => {
      const db = new Database(path, { readonly: true })
      try {
        return {
          schema: db.query('SELECT type, name, sql FROM sqlite_schema ORDER BY type, name').all(),
          migrations: db.query('SELECT hash FROM __drizzle_migrations ORDER BY id').all(),
          pageSize: db.query('PRAGMA page_size').get(),
          autoVacuum: db.query('PRAGMA auto_vacuum').get(),
        }
      } finally {
        db.close()
      }
    }
    const served = read(server.databasePath)
    expect(served.schema.length).toBeGreaterThan(20)
    expect(served).toEqual(read(own))
  } finally {
    await server.stop()
  }
})

test("the parallel run's workers run without the FTL tier, unless the command's environment says otherwise", () => {
  const dir = mkdtempSync(join(tmpdir(), 'pigeonhole-jit-check-'))
  try {
    const record = join(dir, 'record.json')
    writeFileSync(
      join(dir, 'jit.test.ts'),
      `import { test } from 'bun:test'
import { writeFileSync } from 'node:fs'
test('records its environment', () => {
  writeFileSync(${JSON.stringify(record)}, JSON.stringify({ ftl: process.env.BUN_JSC_useFTLJIT ?? null }))
})
`,
    )
    // As `bun test` starts it (bunfig.toml's preload), from a folder of its own; this process's
    // setting not passed on, so the file sees only what the preload's parallel run gives it.
    const { BUN_JSC_useFTLJIT: _, PIGEONHOLE_TEST_SERIAL: __, ...env } = process.env
    const runWith = (extra: Record<string, string>) => {
      const preload = join(import.meta.dir, '..', 'support', 'parallel-run.ts')
      const run = Bun.spawnSync([process.execPath, 'test', '--preload', preload, './jit.test.ts'], {
        cwd: dir,
        env: { ...env, ...extra },
        stdout: 'pipe',
        stderr: 'pipe',
      })
      expect(run.exitCode, run.stderr.toString()).toBe(0)
      return JSON.parse(readFileSync(record, 'utf8'))
    }
    expect(runWith({})).toEqual({ ftl: '0' })
    expect(runWith({ BUN_JSC_useFTLJIT: '1' })).toEqual({ ftl: '1' })
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('a port for a child process lies below the ephemeral range and is free', () => {
  const ephemeralStart = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0])
  for (let i = 0; i < 20; i++) {
    const port = unusedPort()
    expect(port).toBeGreaterThanOrEqual(10_000)
    expect(port).toBeLessThan(ephemeralStart)
    const listener = Bun.listen({ hostname: '127.0.0.1', port, socket: { data() {} } })
    listener.stop(true)
  }
})
