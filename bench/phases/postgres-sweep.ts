/**
 * PostgreSQL mode's concurrency sweep: 4, 16 and 64 SMTP connections delivering 2 KB mail at
 * once, spread over two machines (half each) and over several organisations (connection i
 * sends to an inbox of its own, of organisation i mod the number made), with wake-ups
 * published (DATABASE_WAKE_PUBLISH=on, the default) and with two machines that publish none
 * (off). Half the inboxes have a waiter on the other machine (long polls, one at most every
 * WAITER_PACE_MS, as a test suite waiting for its mail): a machine publishes only the
 * wake-ups of inboxes another machine watches, so without waiters "on" would publish
 * nothing and measure nothing. Per level: messages a second of both machines together; CPU
 * per message of the two server processes together and of the cluster (postmaster and every
 * backend, from /proc); the waiters' answers. Every round's messages are counted back
 * through the API.
 *
 * Each mode runs twice, in the order on, off, off, on (a fresh pair of machines each time,
 * measured only once its first LISTEN's publish-everything window has passed), so a drift
 * over the phase (the tables growing, the machine's load) weighs on both modes alike; the
 * summary sets the means of each mode side by side.
 *
 * What it shows: whether the commits of one machine wait on those of another (throughput
 * should rise, or at least not fall, from one level to the next), and what publishing the
 * wake-ups costs (on against off at each level). In the same phase the SQLite server ingests
 * the same mail over 8 connections, so one PostgreSQL machine's rate (the one-machine rounds
 * of postgres-servers.ts) can be set beside it from one run on one machine.
 */
import { headersFor, type Shape } from '../lib/messages.ts'
import { PigeonholeApi } from '../lib/pigeonhole-api.ts'
import { cpuMs, waitQuiet } from '../lib/proc.ts'
import { round } from '../lib/stats.ts'
import { SmtpClient } from '../lib/smtp-client.ts'
import { startPigeonhole } from '../lib/targets.ts'
import { ingestRound, type IngestRound } from './ingest.ts'
import { serverCpuMs } from './postgres.ts'
import type { Machine } from './postgres-servers.ts'

export const SWEEP_LEVELS = [4, 16, 64]
/** The order of the full sweep's runs: each mode twice, so a drift over the phase weighs on both alike. */
export const SWEEP_RUNS_FULL: readonly ('on' | 'off')[] = ['on', 'off', 'off', 'on']
/** The quick sweep's (CI: proves it runs): each mode once. */
export const SWEEP_RUNS_QUICK: readonly ('on' | 'off')[] = ['on', 'off']
/** A waiter's long polls start at most this often: it keeps its inbox watched without a request per message. */
const WAITER_PACE_MS = 250
/** How long a fresh machine publishes everything (remote-watches.ts's WATCH_BLIND_MS, with a margin). */
const PUBLISH_EVERYTHING_MS = 2000

export interface SweepLevel {
  wakeUps: 'on' | 'off'
  /** Which run of its mode (1 or 2). */
  run: number
  connections: number
  /** Inboxes with a waiter on the other machine, and the waiters' polls answered with a message. */
  waiters: number
  wakes: number
  accepted: number
  rejected: number
  verified: boolean
  seconds: number
  perSecond: number
  /** Both server processes' CPU over the round (until quiet), per accepted message. */
  serverCpuMsPerMessage: number
  databaseCpuMsPerMessage: number
}

/** Starts a machine; `wakeUps` is its DATABASE_WAKE_PUBLISH. */
export type StartMachine = (name: string, wakeUps: 'on' | 'off') => Promise<Machine>

interface Sender {
  client: SmtpClient
  to: string
  count: () => Promise<number>
  /** The other machine's API and the inbox's id, when this inbox has a waiter. */
  waiter: { api: PigeonholeApi; inboxId: string } | null
}

/**
 * Long polls on one inbox until `signal` aborts, one started at most every WAITER_PACE_MS,
 * each for mail received from its start on; answers how many answered with a message.
 */
async function waitOn(api: PigeonholeApi, inboxId: string, signal: AbortSignal): Promise<number> {
  let wakes = 0
  while (!signal.aborted) {
    const started = performance.now()
    const after = encodeURIComponent(new Date().toISOString())
    try {
      const response = await fetch(
        `${api.base}/v1/inboxes/${inboxId}/messages?wait_seconds=5&limit=1&received_after=${after}`,
        { headers: api.headers, signal },
      )
      if (response.status !== 200 && response.status !== 204)
        throw new Error(`listOrWaitForMessages answered ${response.status}: ${await response.text()}`)
      if (response.status === 200 && ((await response.json()) as { data: unknown[] }).data.length > 0) wakes++
    } catch (error) {
      if (signal.aborted) break
      throw error
    }
    await Bun.sleep(Math.max(0, WAITER_PACE_MS - (performance.now() - started)))
  }
  return wakes
}

/** One level: `connections` senders, alternating machines and keys, for `durationMs`. */
export async function sweepRound(
  machines: [Machine, Machine],
  keys: string[],
  connections: number,
  shape: Shape,
  durationMs: number,
  clusterPort: number,
  { waiters = false }: { waiters?: boolean } = {},
): Promise<Omit<SweepLevel, 'wakeUps' | 'run'>> {
  const senders: Sender[] = await Promise.all(
    Array.from({ length: connections }, async (_, i) => {
      const machine = machines[i % 2]!
      const key = keys[Math.floor(i / 2) % keys.length]!
      const api = new PigeonholeApi(machine.api.base, key)
      const inbox = await api.createInbox()
      // Every other pair of senders: one inbox of each machine, its waiter on the other.
      const waited = waiters && Math.floor(i / 2) % 2 === 0
      return {
        client: await SmtpClient.connect(machine.smtpPort),
        to: inbox.address,
        count: () => api.countMessages(inbox.id),
        waiter: waited ? { api: new PigeonholeApi(machines[(i + 1) % 2]!.api.base, key), inboxId: inbox.id } : null,
      }
    }),
  )
  const stopWaiting = new AbortController()
  const waiting = senders.flatMap(({ waiter }) =>
    waiter ? [waitOn(waiter.api, waiter.inboxId, stopWaiting.signal)] : [],
  )
  const pids = [...new Set(machines.map((machine) => machine.child.pid))]
  const serverBefore = pids.reduce((sum, pid) => sum + cpuMs(pid), 0)
  const databaseBefore = serverCpuMs(clusterPort)
  let accepted = 0
  let rejected = 0
  let lastReply = 0
  const started = performance.now()
  const deadline = started + durationMs
  await Promise.all(
    senders.map(async ({ client, to }) => {
      while (performance.now() < deadline) {
        const reply = await client.send('sender@bench.example', to, headersFor(shape, to), shape.body)
        if (reply.code === 250) {
          accepted++
          lastReply = Math.max(lastReply, reply.at)
        } else rejected++
      }
    }),
  )
  stopWaiting.abort()
  const wakes = (await Promise.all(waiting)).reduce((sum, n) => sum + n, 0)
  for (const pid of pids) await waitQuiet(pid)
  const serverCpu = pids.reduce((sum, pid) => sum + cpuMs(pid), 0) - serverBefore
  const databaseCpu = serverCpuMs(clusterPort) - databaseBefore
  for (const sender of senders) sender.client.close()
  const stored = (await Promise.all(senders.map((sender) => sender.count()))).reduce((sum, n) => sum + n, 0)
  const seconds = (lastReply - started) / 1000
  return {
    connections,
    waiters: waiting.length,
    wakes,
    accepted,
    rejected,
    verified: stored === accepted && rejected === 0,
    seconds: round(seconds, 3),
    perSecond: round(accepted / seconds, 1),
    serverCpuMsPerMessage: round(serverCpu / accepted, 3),
    databaseCpuMsPerMessage: round(databaseCpu / accepted, 3),
  }
}

/**
 * Both modes, in the order `settings.runs`, every level with waiters; each run on a fresh pair of
 * machines, after a discarded warm-up round that lasts at least until their publish-everything
 * window has passed. Machines started and stopped here.
 */
export async function postgresSweep(
  start: StartMachine,
  keys: string[],
  shape: Shape,
  settings: { ingestMs: number; warmUpMs: number; runs: readonly ('on' | 'off')[]; log: (message: string) => void },
  clusterPort: number,
  /** Before each run's machines start (the database's upkeep, outside what is measured). */
  beforeRun: () => Promise<void> = async () => {},
): Promise<SweepLevel[]> {
  const levels: SweepLevel[] = []
  const runs = new Map<'on' | 'off', number>()
  for (const wakeUps of settings.runs) {
    const run = (runs.get(wakeUps) ?? 0) + 1
    runs.set(wakeUps, run)
    await beforeRun()
    const machines = await Promise.all([
      start(`sweep-${wakeUps}${run}-A`, wakeUps),
      start(`sweep-${wakeUps}${run}-B`, wakeUps),
    ])
    const started = performance.now()
    try {
      const warmUp = Math.max(settings.warmUpMs, PUBLISH_EVERYTHING_MS - (performance.now() - started))
      await sweepRound(machines, keys, SWEEP_LEVELS[0]!, shape, warmUp, clusterPort, { waiters: true })
      for (const connections of SWEEP_LEVELS) {
        const level = {
          wakeUps,
          run,
          ...(await sweepRound(machines, keys, connections, shape, settings.ingestMs, clusterPort, { waiters: true })),
        }
        levels.push(level)
        settings.log(
          `postgres sweep, wake-ups ${wakeUps} (run ${run}), ${connections} connections over two machines, ${level.waiters} waiters (${level.wakes} answers): ${Math.round(level.perSecond)} msg/s, CPU/msg servers ${level.serverCpuMsPerMessage} ms, database ${level.databaseCpuMsPerMessage} ms, stored ${level.verified ? 'all' : 'NOT all'} of ${level.accepted}`,
        )
      }
    } finally {
      await Promise.all(machines.map((machine) => machine.stop()))
    }
  }
  return levels
}

/** The SQLite server, same shape, 8 connections (the SQLite ingest phase's method), in this phase's run. */
export async function sqliteBeside(
  shape: Shape,
  settings: { ingestMs: number; warmUpMs: number; rounds: number },
): Promise<IngestRound[]> {
  const server = await startPigeonhole()
  try {
    const api = new PigeonholeApi(server.base, server.key)
    const target = {
      name: 'pigeonhole_sqlite',
      pid: server.child.pid,
      smtpPort: server.smtpPort,
      async prepare() {
        const inbox = await api.createInbox()
        return { to: inbox.address, stored: () => api.countMessages(inbox.id) }
      },
    }
    await ingestRound(target, shape, settings.warmUpMs)
    const rounds: IngestRound[] = []
    for (let r = 0; r < settings.rounds; r++) rounds.push(await ingestRound(target, shape, settings.ingestMs))
    return rounds
  } finally {
    await server.stop()
  }
}
