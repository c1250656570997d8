/**
 * Starts the real server (HTTP and SMTP on ports the OS picks) on a fresh temp SQLite
 * file, and offers small helpers to speak real HTTP to it. Nothing of ours is mocked.
 *
 * PIGEONHOLE_TEST_BACKEND picks the storage the server runs on:
 * - `sqlite` (the default): one server on a fresh SQLite file.
 * - `postgres`: one server with DATABASE_URL on a fresh database of the run's cluster.
 * - `postgres-pair`: two servers (machines A and B) on one fresh database, each port behind
 *   a retrying proxy, so consecutive HTTP requests (each on a new connection) and SMTP
 *   connections alternate between the machines. `url`, `app.httpUrl` and `app.smtpPort` are the proxies'; `app.services`
 *   is machine A's.
 * A test that cannot hold on a backend says so with `describeForBackends` (one line why).
 */
import { describe } from 'bun:test'
import { closeSync, copyFileSync, existsSync, fsyncSync, mkdirSync, openSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { startApp, type RunningApp } from '../../src/app.ts'
import { assemble } from '../../src/app/assemble.ts'
import { start } from '../../src/app/start.ts'
import type { Clock } from '../../src/clock.ts'
import { loadConfig } from '../../src/config.ts'
import { createApiKey } from '../../src/core/api-keys/keys.ts'
import { CLI_ACTOR } from '../../src/core/audit/audit.ts'
import { createOrganization } from '../../src/core/organizations/organizations.ts'
import { createLogger } from '../../src/log.ts'
import type { RoutingProvider } from '../../src/core/common/routing.ts'
import type { Services } from '../../src/core/common/services.ts'
import { openPostgres } from '../../src/storage/postgres/client.ts'
import { openStorage } from '../../src/storage/sqlite/open.ts'
import { type ApiResponse, readApiResponse } from './api-response.ts'
import { countRows } from './messages.ts'
import { migratedDatabase, testCluster } from './postgres.ts'
import { startRetryingProxy } from './retrying-proxy.ts'
import { processScratchDir, scratchDir } from './scratch.ts'
import { layDownSelfSigned } from './tls-seed.ts'

/**
 * Test servers hash console passwords at argon2's floor (8 KiB, well under a millisecond per
 * check) instead of the production default (64 MiB, about 0.1 s, more when the cores are
 * busy): console tests sign in dozens of times and assert what a sign-in does, not what it
 * costs. A test whose assertion needs checks to be slow, such as several in flight at once,
 * starts its server with `REAL_PASSWORD_COST`.
 */
const TEST_PASSWORD_COST = { CONSOLE_PASSWORD_MEMORY_KIB: '8' }
export const REAL_PASSWORD_COST = { CONSOLE_PASSWORD_MEMORY_KIB: String(loadConfig({}).consolePasswordMemoryKib) }

export type TestBackend = 'sqlite' | 'postgres' | 'postgres-pair'
const BACKENDS: TestBackend[] = ['sqlite', 'postgres', 'postgres-pair']

/** The backend PIGEONHOLE_TEST_BACKEND names (sqlite when unset); an unknown name stops the run. */
export function testBackend(): TestBackend {
  const named = process.env.PIGEONHOLE_TEST_BACKEND || 'sqlite'
  if (!BACKENDS.includes(named as TestBackend))
    throw new Error(`PIGEONHOLE_TEST_BACKEND must be one of ${BACKENDS.join(', ')}, not ${named}`)
  return named as TestBackend
}

// The cluster starts when this module loads (a few seconds on busy cores), not inside the
// first test's hook, whose timeout would cut initdb off. Starting a server there also
// migrates a fresh database (and, for the pair, starts two assemblies): run these backends
// with `bun test --timeout 20000` (.ci/run does).
if (testBackend() !== 'sqlite') testCluster()

/**
 * The pair's HTTP proxies, by port. fetch keeps a connection alive between requests, and the
 * proxy picks a machine per connection, so a test's consecutive requests would mostly go to
 * one machine. Requests to a pair's proxy go out on a new connection each, so they alternate
 * between A and B as a load balancer may route each request: a form or a cursor from one
 * machine is used on the other, a rate counted on both.
 */
const pairProxyPorts = new Set<number>()
if (testBackend() === 'postgres-pair') {
  const keepAliveFetch = globalThis.fetch
  const newConnectionPerRequest = (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(input instanceof Request ? input.url : input)
    const toPair =
      url.hostname === '127.0.0.1' || url.hostname === 'localhost' ? pairProxyPorts.has(Number(url.port)) : false
    return keepAliveFetch(input, toPair ? { ...init, keepalive: false } : init)
  }
  globalThis.fetch = Object.assign(newConnectionPerRequest, keepAliveFetch)
}

const skipsReported = new Set<string>()

/**
 * `describe` on the listed backends; on any other, `describe.skip` with one line saying why
 * (the test opens the SQLite file, kills a process, reads one process's state...). Every
 * use is a place where the PostgreSQL modes are not proven by the API suite: keep it rare.
 */
export function describeForBackends(backends: TestBackend[], reason: string, label: string, body: () => void): void {
  const backend = testBackend()
  const runs = backends.includes(backend)
  if (!runs && !skipsReported.has(label)) {
    skipsReported.add(label)
    console.warn(`skipped on ${backend}: ${label} (${reason})`)
  }
  describe.skipIf(!runs)(label, body)
}

/**
 * A SQLite file the server's own opening made and migrated, once per process: each test server
 * starts on a copy of it instead of running every migration into an empty file (about 6 ms of
 * CPU a start, a fifth of a test server's start; hundreds of starts a run). The copy is what
 * migrating gives (tables, PRAGMAs kept in the file such as its page size, the record of the
 * migrations); the server still runs the migrator over it, which finds nothing to apply.
 * Migrating an empty file stays proven by every server started outside this harness.
 */
let migratedFile: string | undefined

function layDownMigratedFile(databasePath: string): void {
  if (existsSync(databasePath)) return // the test's own file (a restart, a seeded database)
  if (!migratedFile) {
    const path = join(processScratchDir('pigeonhole-migrated-'), 'pigeonhole.db')
    openStorage(path).close() // close() folds the WAL back: the file is whole on its own
    migratedFile = path
  }
  mkdirSync(dirname(databasePath), { recursive: true })
  copyFileSync(migratedFile, databasePath)
  // Flushed as SQLite flushes what it creates: a test may cut its volume off without a flush.
  for (const [path, flags] of [
    [databasePath, 'r+'],
    [dirname(databasePath), 'r'],
  ] as const) {
    const fd = openSync(path, flags)
    try {
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
  }
}

export interface TestServerOptions {
  env?: Record<string, string>
  clock?: Clock
  routing?: RoutingProvider
}

export type { ApiResponse }

export interface Tenant {
  organizationId: string
  key: string
}

export type TestServer = Awaited<ReturnType<typeof startTestServer>>

export async function startTestServer(options: TestServerOptions = {}) {
  const dir = scratchDir('pigeonhole-test-')
  const databasePath = join(dir, 'pigeonhole.db')
  const config = loadConfig({
    PORT: '0',
    SMTP_PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_PATH: databasePath,
    RECEIVING_DOMAIN: 'inbox.test',
    ...TEST_PASSWORD_COST,
    ...options.env,
  })
  const logs: Record<string, any>[] = []
  const logger = createLogger('debug', (line) => logs.push(JSON.parse(line)))
  if (testBackend() === 'sqlite') layDownMigratedFile(config.databasePath)
  // Where the server looks: a test may move its database (DATABASE_PATH) to a volume of its own.
  await layDownSelfSigned(config.databasePath, config.receivingDomain)
  const { app, machines, databaseUrl } = await startBackend(config, options, logger, dir)

  let pg: ReturnType<typeof openPostgres> | undefined
  async function query(sql: string, ...params: unknown[]): Promise<Record<string, any>[]> {
    if (!databaseUrl) return app.storage!.sqlite.query(sql).all(...(params as string[])) as Record<string, any>[]
    pg ??= openPostgres(databaseUrl, { max: 1 })
    let n = 0
    return [
      ...(await pg.unsafe(
        sql.replaceAll('?', () => `$${++n}`),
        params as string[],
      )),
    ]
  }

  // A server that closes connections idle for a second or two (tests of that timeout) races
  // a client reusing one: HTTP/1.1 keep-alive's known race (RFC 9112, 9.3.1), which Bun's
  // fetch does not retry. Requests to such a server open a connection each, as the console's
  // test browser always does; the timeout's own tests use raw sockets.
  const keepalive = config.httpIdleTimeoutSeconds >= 5

  async function request<T = any>(
    method: string,
    path: string,
    init: { key?: string | null; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {},
  ): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...init.headers }
    if (init.key) headers.authorization = `Bearer ${init.key}`
    let body: string | undefined
    if (init.rawBody !== undefined) body = init.rawBody
    else if (init.body !== undefined) {
      body = JSON.stringify(init.body)
      headers['content-type'] = 'application/json'
    }
    return readApiResponse<T>(await fetch(`${app.httpUrl}${path}`, { method, headers, body, keepalive }))
  }

  return {
    app,
    /** Every server behind `url`: one, or machines A and B of the pair (per-machine state lives there). */
    machines,
    /** A per-machine count (waits held, listeners) summed over every machine behind `url`. */
    sum: (count: (services: Services) => number): number =>
      machines.reduce((total, machine) => total + count(machine.services), 0),
    config,
    logs,
    databasePath,
    /** DATABASE_URL of the PostgreSQL backends; undefined on SQLite. */
    databaseUrl,
    url: app.httpUrl,
    /** A new organisation with one key, made as the operator's `cli orgs create` and `cli keys create` make them. */
    async tenant(name = 'test-org'): Promise<Tenant> {
      const org = await createOrganization(app.services, CLI_ACTOR, { name, preset: 'hosted' })
      return {
        organizationId: org.id,
        key: (await createApiKey(app.services, CLI_ACTOR, { organizationId: org.id })).key,
      }
    },
    /** Another key of the same organisation. */
    async extraKey(organizationId: string): Promise<string> {
      return (await createApiKey(app.services, CLI_ACTOR, { organizationId })).key
    },
    /**
     * `SELECT count(*) AS n ...` with `?` parameters, read straight from the database as an
     * operator would (the SQLite file read-only, or the PostgreSQL database).
     */
    async countRows(sql: string, ...params: string[]): Promise<number> {
      if (!databaseUrl) return countRows(databasePath, sql, ...params)
      const [row] = await query(sql, ...params)
      return Number(row!.n)
    },
    /**
     * One SQL statement with `?` parameters straight on the server's database, behind the
     * server's back (to seed what the API cannot make, or to damage stored bytes). Written
     * in the SQL both dialects share.
     */
    query,
    request,
    get: <T = any>(path: string, key?: string | null, headers?: Record<string, string>) =>
      request<T>('GET', path, { key, headers }),
    delete: <T = any>(path: string, key?: string | null) => request<T>('DELETE', path, { key }),
    post: <T = any>(path: string, key: string | null, body?: unknown, headers?: Record<string, string>) =>
      request<T>('POST', path, { key, body, headers }),
    async stop() {
      await pg?.end()
      await app.stop()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/**
 * The server(s) for the chosen backend. In the pair, machine B gets its own folder (its
 * spool and TLS files are per machine, as on Fly) and the same config otherwise; logs of
 * both machines go to one list.
 */
async function startBackend(
  config: ReturnType<typeof loadConfig>,
  options: TestServerOptions,
  logger: ReturnType<typeof createLogger>,
  dir: string,
): Promise<{ app: RunningApp; machines: RunningApp[]; databaseUrl?: string }> {
  const backend = testBackend()
  if (backend === 'sqlite') {
    const app = await startApp({ config, clock: options.clock, routing: options.routing, logger })
    return { app, machines: [app] }
  }
  const databaseUrl = await migratedDatabase()
  const withUrl = { ...config, databaseUrl, databasePoolSize: Math.min(config.databasePoolSize, 4) }
  if (backend === 'postgres') {
    const app = await startApp({ config: withUrl, clock: options.clock, routing: options.routing, logger })
    return { app, machines: [app], databaseUrl }
  }
  const bPath = join(dir, 'b', 'pigeonhole.db')
  await layDownSelfSigned(bPath, config.receivingDomain)
  // The proxies are the pair's public address, as Fly's proxy is: both machines name it in
  // what they write (download links, setup links, the console's example commands), so a page
  // or a link from one machine is the same as from the other.
  let ports: { a: RunningApp; b: RunningApp } | undefined
  const http = startRetryingProxy(() => (ports ? [ports.a.httpPort, ports.b.httpPort] : []))
  const smtp = startRetryingProxy(() => (ports ? [ports.a.smtpPort, ports.b.smtpPort] : []))
  pairProxyPorts.add(http.port)
  const publicConfig = { ...withUrl, ...publicAddress(config, http.port) }
  const machine = async (machineConfig: typeof config) => {
    const assembly = await assemble({ config: machineConfig, clock: options.clock, routing: options.routing, logger })
    const running = await start(assembly)
    assembly.addresses.smtpListening(smtp.port)
    return running
  }
  let a: RunningApp | undefined
  let b: RunningApp
  try {
    a = await machine(publicConfig)
    b = await machine({ ...publicConfig, databasePath: bPath })
  } catch (error) {
    await a?.stop()
    http.stop()
    smtp.stop()
    throw error
  }
  ports = { a, b }
  const first = a
  const app: RunningApp = {
    ...a,
    httpPort: http.port,
    smtpPort: smtp.port,
    httpUrl: `http://127.0.0.1:${http.port}`,
    async stop() {
      await Promise.all([first.stop(), b.stop()])
      http.stop()
      smtp.stop()
      pairProxyPorts.delete(http.port)
    },
  }
  return { app, machines: [a, b], databaseUrl }
}

/** BASE_URL and FILES_URL naming the pair's HTTP proxy, where the test left them at their defaults. */
function publicAddress(config: ReturnType<typeof loadConfig>, port: number): { baseUrl: string; filesUrl: string } {
  // The defaults: BASE_URL names PORT (0 here), FILES_URL is BASE_URL.
  const baseUrl = config.baseUrl === `http://localhost:${config.port}` ? `http://localhost:${port}` : config.baseUrl
  return { baseUrl, filesUrl: config.filesUrl === config.baseUrl ? baseUrl : config.filesUrl }
}

/** Asserts the error envelope shape and that request_id equals the X-Request-Id header. */
export function errorCode(response: ApiResponse): string {
  const requestId = response.headers.get('x-request-id')
  if (!requestId) throw new Error('response has no X-Request-Id')
  if (response.body?.error?.request_id !== requestId)
    throw new Error(`error.request_id ${response.body?.error?.request_id} != header ${requestId}: ${response.text}`)
  if (typeof response.body.error.message !== 'string' || response.body.error.message === '')
    throw new Error('error.message missing')
  return response.body.error.code
}
