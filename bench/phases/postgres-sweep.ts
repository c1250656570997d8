/**
 * PostgreSQL mode's concurrency sweep: 4, 16 and 64 SMTP connections delivering 2 KB mail at
 * once, spread over two machines (half each) and over several organisations (connection i
 * sends to an inbox of its own, of organisation i mod the number made), first with wake-ups
 * published (DATABASE_WAKE_PUBLISH=on, the default), then with two fresh machines that publish
 * none (off). Per level: messages a second of both machines together; CPU per message of the
 * two server processes together and of the cluster (postmaster and every backend, from
 * /proc). Every round's messages are counted back through the API.
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

export interface SweepLevel {
  wakeUps: 'on' | 'off'
  connections: number
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
}

/** One level: `connections` senders, alternating machines and keys, for `durationMs`. */
export async function sweepRound(
  machines: [Machine, Machine],
  keys: string[],
  connections: number,
  shape: Shape,
  durationMs: number,
  clusterPort: number,
): Promise<Omit<SweepLevel, 'wakeUps'>> {
  const senders: Sender[] = await Promise.all(
    Array.from({ length: connections }, async (_, i) => {
      const machine = machines[i % 2]!
      const api = new PigeonholeApi(machine.api.base, keys[Math.floor(i / 2) % keys.length]!)
      const inbox = await api.createInbox()
      return {
        client: await SmtpClient.connect(machine.smtpPort),
        to: inbox.address,
        count: () => api.countMessages(inbox.id),
      }
    }),
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
  for (const pid of pids) await waitQuiet(pid)
  const serverCpu = pids.reduce((sum, pid) => sum + cpuMs(pid), 0) - serverBefore
  const databaseCpu = serverCpuMs(clusterPort) - databaseBefore
  for (const sender of senders) sender.client.close()
  const stored = (await Promise.all(senders.map((sender) => sender.count()))).reduce((sum, n) => sum + n, 0)
  const seconds = (lastReply - started) / 1000
  return {
    connections,
    accepted,
    rejected,
    verified: stored === accepted && rejected === 0,
    seconds: round(seconds, 3),
    perSecond: round(accepted / seconds, 1),
    serverCpuMsPerMessage: round(serverCpu / accepted, 3),
    databaseCpuMsPerMessage: round(databaseCpu / accepted, 3),
  }
}

/** Both modes, every level, each with a discarded warm-up round first; machines started and stopped here. */
export async function postgresSweep(
  start: StartMachine,
  keys: string[],
  shape: Shape,
  settings: { ingestMs: number; warmUpMs: number; log: (message: string) => void },
  clusterPort: number,
): Promise<SweepLevel[]> {
  const levels: SweepLevel[] = []
  for (const wakeUps of ['on', 'off'] as const) {
    const machines = await Promise.all([start(`sweep-${wakeUps}-A`, wakeUps), start(`sweep-${wakeUps}-B`, wakeUps)])
    try {
      await sweepRound(machines, keys, SWEEP_LEVELS[0]!, shape, settings.warmUpMs, clusterPort)
      for (const connections of SWEEP_LEVELS) {
        const level = {
          wakeUps,
          ...(await sweepRound(machines, keys, connections, shape, settings.ingestMs, clusterPort)),
        }
        levels.push(level)
        settings.log(
          `postgres sweep, wake-ups ${wakeUps}, ${connections} connections over two machines: ${Math.round(level.perSecond)} msg/s, CPU/msg servers ${level.serverCpuMsPerMessage} ms, database ${level.databaseCpuMsPerMessage} ms, stored ${level.verified ? 'all' : 'NOT all'} of ${level.accepted}`,
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
