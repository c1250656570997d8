/**
 * A real PgBouncer in front of a test cluster, in the pool mode a test chooses: the pooler an
 * operator is most likely to put between the machines and PostgreSQL. Debian's `pgbouncer`
 * package; where it is not installed the tests using it are skipped with one line saying why
 * (`describeWithPgBouncer`), and CI (which sets PIGEONHOLE_REQUIRE_POSTGRES=1) fails instead.
 *
 * PgBouncer refuses to run as root, so as root it runs as `postgres`, like the cluster. It
 * trusts every client (`auth_type = any`, loopback only) and logs in as `postgres` itself.
 */
import { describe } from 'bun:test'
import { chownSync, existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { freePort } from './entry-process.ts'
import { describeWithPostgres, type TestCluster } from './postgres.ts'
import { scratchDir } from './scratch.ts'
import { until } from './wait.ts'

const binary = Bun.which('pgbouncer') ?? Bun.which('pgbouncer', { PATH: '/usr/sbin:/usr/bin' })
const isRoot = process.getuid?.() === 0

/** `describe`, or a skip with one line saying why when PgBouncer is not installed. */
export function describeWithPgBouncer(label: string, body: () => void): void {
  const unavailable = binary ? null : 'PgBouncer is not installed here (Debian package `pgbouncer`)'
  if (unavailable && process.env.PIGEONHOLE_REQUIRE_POSTGRES === '1')
    throw new Error(`the PgBouncer tests cannot run: ${unavailable}`)
  if (unavailable) {
    console.warn(`skipped: ${label} (${unavailable})`)
    describe.skip(label, body)
    return
  }
  // It pools connections to a cluster: without PostgreSQL, skipped as the PostgreSQL tests are.
  describeWithPostgres(label, body)
}

export interface Pooler {
  /** A URL for database `name` through the pooler. */
  url(name: string): string
  stop(): void
}

/** Starts PgBouncer on a free loopback port in `mode`, in front of `cluster`; resolves once it accepts connections. */
export async function startPgBouncer(cluster: TestCluster, mode: 'session' | 'transaction'): Promise<Pooler> {
  const folder = scratchDir('pigeonhole-pgbouncer-')
  const port = await freePort()
  const config = join(folder, 'pgbouncer.ini')
  const pidFile = join(folder, 'pgbouncer.pid')
  writeFileSync(
    config,
    [
      '[databases]',
      `* = host=127.0.0.1 port=${cluster.port} user=postgres`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = any',
      `pool_mode = ${mode}`,
      'max_client_conn = 100',
      'default_pool_size = 10',
      // postgres.js sends these at connect; PgBouncer refuses start-up parameters it does not know.
      'ignore_startup_parameters = extra_float_digits,statement_timeout,options',
      `logfile = ${join(folder, 'pgbouncer.log')}`,
      `pidfile = ${pidFile}`,
      '',
    ].join('\n'),
  )
  if (isRoot) {
    const uid = Number(Bun.spawnSync(['id', '-u', 'postgres']).stdout.toString().trim())
    const gid = Number(Bun.spawnSync(['id', '-g', 'postgres']).stdout.toString().trim())
    chownSync(folder, uid, gid)
    chownSync(config, uid, gid)
  }
  const command = isRoot ? ['su', 'postgres', '-s', '/bin/sh', '-c', `exec ${binary} ${config}`] : [binary!, config]
  const child = Bun.spawn(command, { stdio: ['ignore', 'ignore', 'ignore'] })
  await until(
    async () => {
      if (child.exitCode !== null) throw new Error(`pgbouncer exited with ${child.exitCode} (log in ${folder})`)
      return await canConnect(port)
    },
    'PgBouncer to accept connections',
    { timeoutMs: 10_000, intervalMs: 50 },
  )
  return {
    url: (name) => `postgres://postgres@127.0.0.1:${port}/${name}`,
    stop: () => {
      // As root the child is `su`, and PgBouncer its own child: killing `su` alone left every
      // PgBouncer of the run behind. Its pid file names the process to end.
      if (existsSync(pidFile)) {
        try {
          process.kill(Number(readFileSync(pidFile, 'utf8').trim()), 'SIGTERM')
        } catch {}
      }
      child.kill('SIGKILL')
    },
  }
}

async function canConnect(port: number): Promise<boolean> {
  try {
    const socket = await Bun.connect({ hostname: '127.0.0.1', port, socket: { data() {} } })
    socket.end()
    return true
  } catch {
    return false
  }
}
