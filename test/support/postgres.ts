/**
 * A throwaway PostgreSQL cluster for the tests under test/postgres/: initdb into a scratch
 * folder, listen on 127.0.0.1 on a free port, trust authentication (loopback only, no
 * password to leak). One cluster serves the whole `bun test` run (about 2 s to start); each
 * test file takes a fresh database of its own with `freshDatabase()`. The cluster is stopped
 * with `-m immediate` when the process exits, and its folder removed.
 *
 * Debian's server refuses to run as root, so as root every server command runs through
 * `su postgres`. Where no PostgreSQL binaries are installed the tests are skipped with one
 * line saying why (`describeWithPostgres`), so `bun test` passes with Bun alone; .ci/run
 * installs Debian's `postgresql` so CI always runs them.
 *
 * The bench's PostgreSQL phases (bench/phases/postgres.ts, postgres-servers.ts) start their cluster here too.
 */
import { describe } from 'bun:test'
import { chmodSync, chownSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { openPostgres } from '../../src/storage/postgres/client.ts'
import { migratePostgres } from '../../src/storage/postgres/migrate.ts'
import { scratchDir } from './scratch.ts'

/** Where initdb and pg_ctl live: on the PATH, else Debian's versioned folder (newest first). */
function findBinaries(): string | null {
  const onPath = Bun.which('pg_ctl')
  if (onPath && Bun.which('initdb')) return onPath.slice(0, -'/pg_ctl'.length)
  const debian = '/usr/lib/postgresql'
  if (!existsSync(debian)) return null
  const versions = readdirSync(debian)
    .filter((v) => existsSync(join(debian, v, 'bin', 'pg_ctl')))
    .sort((a, b) => Number(b) - Number(a))
  return versions[0] ? join(debian, versions[0], 'bin') : null
}

const isRoot = process.getuid?.() === 0

/** Why the PostgreSQL tests cannot run here, or null when they can. */
function whyUnavailable(bin: string | null): string | null {
  if (!bin) return 'PostgreSQL is not installed here (no initdb/pg_ctl); .ci/run installs it'
  if (isRoot && Bun.spawnSync(['id', '-u', 'postgres']).exitCode !== 0) return 'running as root and there is no `postgres` user to run the server as'
  return null
}

const bin = findBinaries()
const unavailable = whyUnavailable(bin)
let reported = false

/**
 * `describe`, or `describe.skip` with one line saying why when PostgreSQL is not installed.
 * .ci/run sets PIGEONHOLE_REQUIRE_POSTGRES=1 so that a broken install fails CI instead of skipping.
 */
export function describeWithPostgres(label: string, body: () => void): void {
  if (unavailable && process.env.PIGEONHOLE_REQUIRE_POSTGRES === '1') throw new Error(`the PostgreSQL tests cannot run: ${unavailable}`)
  if (unavailable && !reported) {
    reported = true
    console.warn(`skipped: the PostgreSQL tests (${unavailable})`)
  }
  describe.skipIf(unavailable !== null)(label, body)
}

/**
 * Runs a server binary as the user allowed to run it; throws with its output on failure.
 * Output goes to a file, not a pipe: the server that `pg_ctl start` leaves running would
 * inherit a pipe and keep it open, and waiting for its end would never return.
 */
function run(args: string[], outputFile: string): void {
  const command = isRoot ? ['su', 'postgres', '-s', '/bin/sh', '-c', args.map(shellQuote).join(' ')] : args
  const result = Bun.spawnSync(command, { stdin: 'ignore', stdout: Bun.file(outputFile), stderr: Bun.file(outputFile) })
  if (result.exitCode !== 0) throw new Error(`${args[0]} failed (${result.exitCode}): ${readFileSync(outputFile, 'utf8')}`)
}

const shellQuote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`

/** A port nobody listens on right now (the kernel's choice for port 0). */
function freePort(): number {
  const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = probe.port
  probe.stop(true)
  return port
}

export interface TestCluster {
  port: number
  /** A URL for database `name` on this cluster, as the superuser `postgres`. */
  url(name?: string): string
  /** Stops the server at once (no checkpoint, like a crash) and starts it again on the same port. */
  restart(): void
  /** Stops the server at once; `start()` brings it back. */
  stop(): void
  /** Starts the server if it is stopped. */
  start(): void
}

function createCluster(durable = false, password?: string): TestCluster {
  const folder = scratchDir('pigeonhole-pg-')
  const data = join(folder, 'data')
  if (isRoot) {
    const ids = Bun.spawnSync(['id', '-u', 'postgres']).stdout.toString().trim()
    const gid = Bun.spawnSync(['id', '-g', 'postgres']).stdout.toString().trim()
    chownSync(folder, Number(ids), Number(gid))
  }
  chmodSync(folder, 0o700)
  const pgCtl = join(bin!, 'pg_ctl')
  const out = join(folder, 'commands.log')
  // With a password, every connection must give it (scram); otherwise loopback is trusted.
  const auth = password === undefined ? ['-A', 'trust'] : ['-A', 'scram-sha-256', `--pwfile=${join(folder, 'password')}`]
  if (password !== undefined) {
    writeFileSync(join(folder, 'password'), `${password}\n`)
    if (isRoot) chownSync(join(folder, 'password'), Number(Bun.spawnSync(['id', '-u', 'postgres']).stdout.toString().trim()), 0)
  }
  run([join(bin!, 'initdb'), '-D', data, '-U', 'postgres', ...auth, '-E', 'UTF8', '--locale=C', '--no-sync'], out)
  const port = freePort()
  // fsync off for the tests: the cluster dies with the run, and a test cannot observe power
  // loss anyway. The bench keeps PostgreSQL's own defaults (fsync and synchronous_commit on):
  // a figure measured without the flush of every commit would flatter the server.
  // The socket lives in the scratch folder so no system folder is needed.
  const options = `-p ${port} -k ${folder} -c listen_addresses=127.0.0.1${durable ? '' : ' -c fsync=off'} -c max_connections=200`
  let running = false
  const start = () => {
    if (running) return
    run([pgCtl, '-D', data, '-o', options, '-l', join(folder, 'server.log'), '-w', '-t', '60', 'start'], out)
    running = true
  }
  const stop = () => {
    running = false
    run([pgCtl, '-D', data, '-m', 'immediate', '-w', 'stop'], out)
  }
  start()
  // A watcher outlives this process by at most a second and then stops the server and removes
  // its folder, however the run ends (an exit handler would miss a kill or a crash). It runs
  // in a session of its own (setsid): Ctrl+C, or a kill of the run's process group, reaches
  // every process of the group, and a watcher killed with the run left its cluster running.
  const stopCommand = [pgCtl, '-D', data, '-m', 'immediate', 'stop'].map(shellQuote).join(' ')
  const asServerUser = isRoot ? `su postgres -s /bin/sh -c ${shellQuote(stopCommand)}` : stopCommand
  const watcher = Bun.spawn(['setsid', 'sh', '-c', `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; ${asServerUser} >/dev/null 2>&1; rm -rf ${shellQuote(folder)}`], {
    stdio: ['ignore', 'ignore', 'ignore'],
  })
  watcher.unref()
  return {
    port,
    url: (name = 'postgres') => `postgres://postgres${password === undefined ? '' : `:${encodeURIComponent(password)}`}@127.0.0.1:${port}/${name}`,
    restart() {
      stop()
      start()
    },
    stop,
    start,
  }
}

let shared: TestCluster | null = null
let durable = false

/**
 * Asks for the run's cluster with PostgreSQL's default durability (fsync on, every commit
 * flushed before it returns) instead of fsync off: the bench calls it before its first use.
 */
export function useDurableCluster(): void {
  if (shared && !durable) throw new Error("the run's PostgreSQL cluster already started with fsync off")
  durable = true
}

/** The run's cluster, started on first use. */
export function testCluster(): TestCluster {
  if (unavailable) throw new Error(unavailable)
  shared ??= createCluster(durable)
  return shared
}

/**
 * A cluster of the caller's own, for a test that stops or restarts its server: the run's
 * cluster serves the other test files at the same time. Removed when the run ends, as the
 * run's is; `stop()` it when done to give its memory back sooner. With `password`, the
 * superuser has that password and every connection must give it (its `url()` carries it,
 * percent-encoded); without, loopback connections are trusted.
 */
export function ownCluster(options: { password?: string } = {}): TestCluster {
  if (unavailable) throw new Error(unavailable)
  return createCluster(false, options.password)
}

let databases = 0

/** A new empty database on the run's cluster (or on `cluster`); returns its URL. */
export async function freshDatabase(cluster: TestCluster = testCluster()): Promise<string> {
  const name = `t${process.pid}_${++databases}_${Date.now().toString(36)}`
  const admin = openPostgres(cluster.url(), { max: 1 })
  try {
    await admin.unsafe(`CREATE DATABASE ${name} TEMPLATE template0`)
  } finally {
    await admin.end()
  }
  return cluster.url(name)
}

/** A fresh database with PostgreSQL mode's schema migrated into it. */
export async function migratedDatabase(cluster?: TestCluster): Promise<string> {
  const url = await freshDatabase(cluster)
  await migratePostgres(url)
  return url
}
