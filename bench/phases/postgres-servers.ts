/**
 * The server itself in PostgreSQL mode: one and two server processes (the production bundle,
 * DATABASE_URL set) on one database of the throwaway local cluster (test/support/postgres.ts,
 * with PostgreSQL's default durability: fsync and synchronous_commit on, so every commit is
 * flushed to disk before the `250`, as the SQLite server's are), measured the way the SQLite
 * phases measure the SQLite server:
 *
 * - Ingest of 2 KB messages, 8 connections per machine (bench/phases/ingest.ts): with one
 *   machine, then with two taking mail at the same time (each its own inbox of one
 *   organisation). Per machine: messages a second and the server process's CPU per message;
 *   beside it the cluster's CPU per message (postmaster and every backend, from /proc).
 * - Connect → content on one machine (bench/phases/end-to-end.ts): the long poll waits, a new
 *   SMTP connection delivers, the sample ends when the poll's answer is read.
 * - Wake-up across machines (bench/phases/latency.ts): the long poll waits on B, the mail goes
 *   into A on a kept connection; the sample is from A's `250` to B's answer.
 * - The concurrency sweep (./postgres-sweep.ts): 4, 16 and 64 connections over two machines and
 *   several organisations, wake-ups published and not; and the SQLite server's ingest in the
 *   same run, beside one PostgreSQL machine's.
 *
 * The organisation and key are made with the admin CLI in a SQLite file and moved over with
 * `db copy --to`, as an operator moving to PostgreSQL does. The servers run the production
 * bundle, dist/server.js.
 */
import { mkdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { openPostgres } from '../../src/storage/postgres/client.ts'
import { freshDatabase, testCluster, useDurableCluster } from '../../test/support/postgres.ts'
import type { Shape } from '../lib/messages.ts'
import { PigeonholeApi } from '../lib/pigeonhole-api.ts'
import { freePort, spawnChild, waitHttp, waitTcp, type Child } from '../lib/proc.ts'
import { round } from '../lib/stats.ts'
import { pigeonholeEnv, profileFlags, ROOT, runCli, SERVER_ENTRY, tempDir } from '../lib/targets.ts'
import { emptySamples, pigeonholeEndToEnd } from './end-to-end.ts'
import { ingestRound, type IngestRound } from './ingest.ts'
import { pigeonholeLatency, summarize, type LatencyResult } from './latency.ts'
import { serverCpuMs } from './postgres.ts'
import { postgresSweep, SWEEP_RUNS_FULL, SWEEP_RUNS_QUICK, type SweepLevel, sqliteBeside } from './postgres-sweep.ts'

export interface PostgresServersSettings {
  ingestRounds: number
  ingestMs: number
  warmUpMs: number
  endToEndSamples: number
  wakeSamples: number
  /** The sweep's runs, in order (wake-ups on or off). */
  sweepRuns: readonly ('on' | 'off')[]
  log: (message: string) => void
}

/** `bun run bench`. */
export const POSTGRES_SERVERS_FULL = {
  ingestRounds: 3,
  ingestMs: 2000,
  // A second: after 300 ms the first measured round on a fresh machine still ran its server at
  // 1.25 to 1.54 ms of CPU a message against 0.73 to 1.0 in the rounds after (JIT tiers, pools).
  warmUpMs: 1000,
  endToEndSamples: 200,
  wakeSamples: 300,
  sweepRuns: SWEEP_RUNS_FULL,
}
/** `--quick` (CI): about fifteen seconds, the server starts included. */
export const POSTGRES_SERVERS_QUICK = {
  ingestRounds: 1,
  ingestMs: 400,
  warmUpMs: 150,
  endToEndSamples: 20,
  wakeSamples: 30,
  sweepRuns: SWEEP_RUNS_QUICK,
}

/** Ingest of one round on one machine, with the cluster's CPU spread over the round's messages. */
export interface PostgresIngest extends IngestRound {
  machine: 'A' | 'B'
  databaseCpuMsPerMessage: number
}

export type PostgresServersResult =
  | { skipped: string }
  | {
      entry: string
      poolSize: number
      /** The cluster's fsync and synchronous_commit, read from the server: what every figure was measured with. */
      durability: Durability
      /** Rounds with A alone, and rounds with A and B at once (one row per machine). */
      ingest: { one: PostgresIngest[]; two: PostgresIngest[] }
      connectToContent: LatencyResult
      wakeAcrossMachines: LatencyResult
      /** 4, 16, 64 connections over two machines, wake-ups on then off. */
      sweep: SweepLevel[]
      /** The SQLite server's ingest rounds of the same shape in the same run (8 connections). */
      sqlite: IngestRound[]
    }

/** Connections each machine's pool opens (DATABASE_POOL_SIZE's default). */
const POOL_SIZE = 10
/** Organisations the sweep spreads its connections over: one organisation's quota lock serialises its mail. */
const SWEEP_ORGANIZATIONS = 8

export interface Durability {
  fsync: string
  synchronousCommit: string
}

/** The durability settings the server at `url` runs with (SHOW, not what was asked for). */
export async function durabilityOf(url: string): Promise<Durability> {
  const sql = openPostgres(url, { max: 1 })
  try {
    const [fsync] = await sql`show fsync`
    const [synchronousCommit] = await sql`show synchronous_commit`
    return { fsync: String(fsync!.fsync), synchronousCommit: String(synchronousCommit!.synchronous_commit) }
  } finally {
    await sql.end()
  }
}

/** VACUUM ANALYZE of the database at `url`, between phases. */
async function vacuumAnalyze(url: string): Promise<void> {
  const sql = openPostgres(url, { max: 1 })
  try {
    await sql`vacuum analyze`.simple()
  } finally {
    await sql.end()
  }
}

export interface Machine {
  child: Child
  api: PigeonholeApi
  smtpPort: number
  stop(): Promise<void>
}

export async function startMachine(
  name: string,
  entry: string,
  url: string,
  key: string,
  [port, smtpPort]: [number, number],
  extraEnv: Record<string, string> = {},
): Promise<Machine> {
  // Each machine keeps its spool (and its self-signed certificate) beside its own DATABASE_PATH.
  const dir = tempDir(`pg-${name}`)
  const env = {
    ...pigeonholeEnv(join(dir, 'pigeonhole.db'), port, smtpPort),
    DATABASE_URL: url,
    DATABASE_POOL_SIZE: String(POOL_SIZE),
    ...extraEnv,
  }
  const child = spawnChild(`pigeonhole-postgres-${name}`, [process.execPath, ...profileFlags(), entry], env, ROOT)
  const base = `http://127.0.0.1:${port}`
  await waitHttp(child, `${base}/health`)
  await waitTcp(child, smtpPort)
  return {
    child,
    api: new PigeonholeApi(base, key),
    smtpPort,
    async stop() {
      await child.stop()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/**
 * One organisation and key made by the CLI in SQLite and copied into the empty database `url`,
 * as an operator moving over does; then `organizations - 1` more made by the CLI on
 * PostgreSQL itself. Answers one key per organisation.
 */
export function seed(url: string, organizations = 1): string[] {
  const dir = tempDir('pg-seed')
  try {
    mkdirSync(dir, { recursive: true })
    const env = { DATABASE_PATH: join(dir, 'seed.db'), RECEIVING_DOMAIN: 'bench.test' }
    // --local: the limits a test run never meets (LOCAL_TESTING_LIMITS), above what even the
    // full run asks of one key (about 500 inboxes, 1,100 requests in a minute at most).
    const org = runCli(env, 'orgs', 'create', 'bench', '--local', '--create')
    const keys = [runCli(env, 'keys', 'create', org)]
    runCli(env, 'db', 'copy', '--to', url)
    const onPostgres = { ...env, DATABASE_URL: url }
    for (let i = 1; i < organizations; i++)
      keys.push(runCli(onPostgres, 'keys', 'create', runCli(onPostgres, 'orgs', 'create', `bench-${i}`, '--local')))
    return keys
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

async function ingestOn(
  machine: Machine,
  name: 'A' | 'B',
  shape: Shape,
  durationMs: number,
): Promise<IngestRound & { machine: 'A' | 'B' }> {
  const round = await ingestRound(
    {
      name: `pigeonhole_postgres_${name}`,
      pid: machine.child.pid,
      smtpPort: machine.smtpPort,
      async prepare() {
        const inbox = await machine.api.createInbox()
        return { to: inbox.address, stored: () => machine.api.countMessages(inbox.id) }
      },
    },
    shape,
    durationMs,
  )
  return { ...round, machine: name }
}

/** Runs the machines' rounds at once; the cluster's CPU over them is shared by all their messages. */
async function ingestTogether(
  machines: [Machine, 'A' | 'B'][],
  shape: Shape,
  durationMs: number,
  port: number,
): Promise<PostgresIngest[]> {
  const before = serverCpuMs(port)
  const rounds = await Promise.all(machines.map(([machine, name]) => ingestOn(machine, name, shape, durationMs)))
  const accepted = rounds.reduce((sum, r) => sum + r.accepted, 0)
  const databaseCpuMsPerMessage = round((serverCpuMs(port) - before) / accepted, 3)
  return rounds.map((r) => ({ ...r, databaseCpuMsPerMessage }))
}

export async function postgresServersPhase(
  shape: Shape,
  settings: PostgresServersSettings,
): Promise<PostgresServersResult> {
  let url: string
  let port: number
  try {
    useDurableCluster()
    port = testCluster().port
    url = await freshDatabase()
  } catch (error) {
    return { skipped: error instanceof Error ? error.message : String(error) }
  }
  const entry = SERVER_ENTRY
  const durability = await durabilityOf(url)
  settings.log(
    `postgres servers: cluster with fsync=${durability.fsync}, synchronous_commit=${durability.synchronousCommit}`,
  )
  const keys = seed(url, SWEEP_ORGANIZATIONS)
  const key = keys[0]!
  const machines: Machine[] = []
  try {
    // Ports picked one after the other (picked at once, two could be the same free port), then
    // both machines started together.
    const ports: [number, number][] = []
    for (let i = 0; i < 2; i++) ports.push([await freePort(), await freePort()])
    const started = await Promise.allSettled([
      startMachine('A', entry, url, key, ports[0]!),
      startMachine('B', entry, url, key, ports[1]!),
    ])
    for (const result of started) if (result.status === 'fulfilled') machines.push(result.value)
    const failed = started.find((result) => result.status === 'rejected')
    if (failed) throw failed.reason
    const [a, b] = machines as [Machine, Machine]

    const one: PostgresIngest[] = []
    const two: PostgresIngest[] = []
    // A discarded round first on each: JIT, pools' connections, parse workers.
    await ingestTogether([[a, 'A']], shape, settings.warmUpMs, port)
    await ingestTogether([[b, 'B']], shape, settings.warmUpMs, port)
    for (let r = 1; r <= settings.ingestRounds; r++) {
      const alone = await ingestTogether([[a, 'A']], shape, settings.ingestMs, port)
      one.push(...alone)
      const both = await ingestTogether(
        [
          [a, 'A'],
          [b, 'B'],
        ],
        shape,
        settings.ingestMs,
        port,
      )
      two.push(...both)
      const line = (x: PostgresIngest) =>
        `${x.machine} ${Math.round(x.perSecond)} msg/s, ${x.cpuMsPerMessage.toFixed(2)} ms CPU/msg, stored ${x.stored}/${x.accepted}`
      settings.log(
        `postgres servers ingest round ${r}: one machine ${line(alone[0]!)}; two machines ${both.map(line).join('; ')}; database ${both[0]!.databaseCpuMsPerMessage} ms CPU/msg`,
      )
    }

    const endToEnd = emptySamples()
    await pigeonholeEndToEnd(a.api, a.smtpPort, shape, settings.endToEndSamples, endToEnd)
    const connectToContent = summarize('pigeonhole_postgres', endToEnd.connect)
    settings.log(
      `postgres servers connect → content: p50 ${connectToContent.p50Ms.toFixed(1)} ms, p99 ${connectToContent.p99Ms.toFixed(1)} ms`,
    )

    const wakeAcrossMachines = summarize(
      'pigeonhole_postgres',
      await pigeonholeLatency(a.api, a.smtpPort, shape, settings.wakeSamples, b.api),
    )
    settings.log(
      `postgres servers wake-up from A's 250 to B's answer: p50 ${wakeAcrossMachines.p50Ms.toFixed(2)} ms, p99 ${wakeAcrossMachines.p99Ms.toFixed(2)} ms`,
    )

    await Promise.all(machines.splice(0).map((m) => m.stop()))

    const startSweepMachine = async (name: string, wakeUps: 'on' | 'off') =>
      startMachine(name, entry, url, key, [await freePort(), await freePort()], { DATABASE_WAKE_PUBLISH: wakeUps })
    const sweep = await postgresSweep(
      startSweepMachine,
      keys,
      shape,
      { ingestMs: settings.ingestMs, warmUpMs: settings.warmUpMs, runs: settings.sweepRuns, log: settings.log },
      port,
      // Each run adds thousands of rows, and autovacuum visits the database once a minute: a
      // visit that found them vacuumed and analysed them inside whichever run it met (the 64
      // connections of the first "on" run in three quiet runs of four, 10 to 20% below the other
      // mode). Done before each run, a visit finds at most one run's rows.
      () => vacuumAnalyze(url),
    )
    const sqlite = await sqliteBeside(shape, {
      ingestMs: settings.ingestMs,
      warmUpMs: settings.warmUpMs,
      rounds: settings.ingestRounds,
    })
    for (const r of sqlite)
      settings.log(
        `postgres servers: the SQLite server beside it, ${Math.round(r.perSecond)} msg/s, ${r.cpuMsPerMessage.toFixed(2)} ms CPU/msg`,
      )

    return {
      entry,
      poolSize: POOL_SIZE,
      durability,
      ingest: { one, two },
      connectToContent,
      wakeAcrossMachines,
      sweep,
      sqlite,
    }
  } finally {
    await Promise.all(machines.map((m) => m.stop()))
  }
}
