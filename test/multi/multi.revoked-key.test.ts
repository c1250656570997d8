/**
 * A key revoked while its long polls wait gets no more mail: every waiting poll of the key
 * ends within a second of the revocation with 401 `invalid_api_key`, wherever the revocation
 * was made. Here it is made by the CLI, its own process, as an operator would: in SQLite mode
 * on the server's file, in PostgreSQL mode on the database two server processes share, with
 * polls waiting on both.
 */
import { afterAll, expect, setDefaultTimeout, test } from 'bun:test'
import { ROOT } from '../support/entry-process.ts'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { type MachineProcess, machineApi, pgMachine } from '../support/pg-processes.ts'
import { describeWithPostgres, migratedDatabase } from '../support/postgres.ts'
import { expectError } from '../support/shapes.ts'

setDefaultTimeout(60_000)

/** Within a second, plus room for two busy cores between the CLI's commit and the answer. */
const ENDED_WITHIN_MS = 1_500

/** Revokes `key` with the CLI; returns when it began and when it had committed (exited). */
async function revokeWithCli(key: string, env: Record<string, string>): Promise<{ began: number; done: number }> {
  const began = performance.now()
  const child = Bun.spawn(['bun', 'src/cli.ts', 'keys', 'revoke', key], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [stderr, code] = await Promise.all([new Response(child.stderr).text(), child.exited])
  expect(code, stderr).toBe(0)
  return { began, done: performance.now() }
}

/** Polls waiting with `key` (long waits), each resolving with its answer and when it came. */
function waitingPolls(machines: { httpUrl: string }[], key: string, inboxId: string, each: number) {
  return machines.flatMap((machine) =>
    Array.from({ length: each }, async () => {
      const answer = await machineApi(machine, 'GET', `/v1/inboxes/${inboxId}/messages?wait_seconds=60`, key)
      return { answer, at: performance.now() }
    }),
  )
}

let sqliteServer: TestServer | undefined
afterAll(async () => {
  await sqliteServer?.stop()
})

test('SQLite mode: the waiting polls of a key the CLI revokes end within a second with 401', async () => {
  sqliteServer = await startTestServer({ env: { METRICS_TOKEN: 'revoked-key-metrics' } })
  const server = sqliteServer
  const { key } = await server.tenant()
  const created = await machineApi({ httpUrl: server.url }, 'POST', '/v1/inboxes', key)
  expect(created.status).toBe(201)
  const polls = waitingPolls([{ httpUrl: server.url }], key, created.body.data.id, 3)
  await Bun.sleep(500) // parked
  const revokedAt = await revokeWithCli(key, {
    DATABASE_PATH: server.databasePath,
    DATABASE_URL: server.databaseUrl ?? '',
  })
  for (const { answer, at } of await Promise.all(polls)) {
    expectError(answer, 401, 'invalid_api_key')
    // Still waiting when the revocation began, and ended within the bound of its commit.
    expect(at).toBeGreaterThan(revokedAt.began)
    expect(at - revokedAt.done).toBeLessThan(ENDED_WITHIN_MS)
  }
})

describeWithPostgres('PostgreSQL mode, two machines', () => {
  let url: string
  let a: MachineProcess
  let b: MachineProcess
  afterAll(async () => {
    await Promise.all([a?.remove(), b?.remove()])
  })

  test('the waiting polls of a key the CLI revokes end within a second with 401 on both machines', async () => {
    url = await migratedDatabase()
    a = pgMachine('a', url)
    b = pgMachine('b', url)
    await a.start({ PG_MACHINE_TENANTS: 'local:1' })
    await b.start()
    const key = a.tenants[0]!.keys[0]!
    const created = await machineApi(a, 'POST', '/v1/inboxes', key)
    expect(created.status).toBe(201)
    const polls = waitingPolls([a, b], key, created.body.data.id, 2)
    await Bun.sleep(500)
    const revokedAt = await revokeWithCli(key, { DATABASE_URL: url })
    const ended = await Promise.all(polls)
    for (const { answer, at } of ended) {
      expectError(answer, 401, 'invalid_api_key')
      // Still waiting when the revocation began, and ended within the bound of its commit.
      expect(at).toBeGreaterThan(revokedAt.began)
      expect(at - revokedAt.done).toBeLessThan(ENDED_WITHIN_MS)
    }
    console.info(
      `polls ended ${ended.map(({ at }) => Math.round(at - revokedAt.began)).join(', ')} ms after the CLI began; it took ${Math.round(revokedAt.done - revokedAt.began)} ms`,
    )
  })
})
