/**
 * `bun run bench` (full, a few minutes) or `bun run bench --quick` (under a minute, for CI).
 * Starts every target as a real child process, alternates them round by round (A B A B),
 * prints a table of medians and ratios and writes the raw figures as JSON.
 * Quick mode proves the bench still works: it fails only when a figure is missing.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { machine } from './lib/machine.ts'
import { buildShapes } from './lib/messages.ts'
import { PigeonholeApi } from './lib/pigeonhole-api.ts'
import { rssMiB, waitQuiet } from './lib/proc.ts'
import { missingFigures } from './lib/report.ts'
import { sleep } from './lib/stats.ts'
import { startMaildev, startPigeonhole, startSink } from './lib/targets.ts'
import { summarize as summarizeRun } from './summary.ts'
import { ingestRound, type IngestRound, type IngestTarget } from './phases/ingest.ts'
import { emptySamples, maildevEndToEnd, pigeonholeEndToEnd } from './phases/end-to-end.ts'
import { maildevLatency, pigeonholeLatency } from './phases/latency.ts'
import { capacityPhase } from './phases/capacity.ts'
import { memoryPhase } from './phases/memory.ts'
import { type BigMailFloodResult, bigMailFloodPhase } from './phases/big-mail-flood.ts'
import { readsPhase } from './phases/reads.ts'
import { POSTGRES_FULL, POSTGRES_QUICK, postgresPhase } from './phases/postgres.ts'
import { POSTGRES_SERVERS_FULL, POSTGRES_SERVERS_QUICK, postgresServersPhase } from './phases/postgres-servers.ts'

const quick = process.argv.includes('--quick')
const settings = quick
  ? {
      ingestRounds: 1,
      ingestMs: 400,
      capacitySteps: [10_000],
      smtpSessions: 100,
      latencyRounds: 1,
      latencySamples: 30,
      endToEndRounds: 1,
      endToEndSamples: 20,
      readRounds: 1,
      readMs: 500,
      warmUpMs: 150,
      messages: 1000,
      longPolls: 100,
      startupRuns: 2,
      postgres: POSTGRES_QUICK,
      postgresServers: POSTGRES_SERVERS_QUICK,
    }
  : {
      ingestRounds: 3,
      ingestMs: 2000,
      capacitySteps: [100_000, 1_000_000],
      smtpSessions: 190,
      latencyRounds: 2,
      latencySamples: 150,
      endToEndRounds: 2,
      endToEndSamples: 100,
      readRounds: 3,
      readMs: 2000,
      warmUpMs: 300,
      messages: 10_000,
      longPolls: 1000,
      startupRuns: 7,
      postgres: POSTGRES_FULL,
      postgresServers: POSTGRES_SERVERS_FULL,
    }

const log = (message: string) => console.error(`[bench ${((performance.now() - t0) / 1000).toFixed(1)}s] ${message}`)
const t0 = performance.now()
const shapes = buildShapes()

log(`mode ${quick ? 'quick' : 'full'}; starting pigeonhole, maildev and the SMTP sink`)
const [pigeonhole, maildev, sink] = await Promise.all([startPigeonhole(), startMaildev(), startSink()])
const stopAll = () => Promise.all([pigeonhole.stop(), maildev.stop(), sink.stop()])
process.on('SIGINT', () => stopAll().then(() => process.exit(130)))

try {
  await sleep(500)
  const idle = { pigeonhole: rssMiB(pigeonhole.child.pid), maildev: rssMiB(maildev.child.pid) }
  const api = new PigeonholeApi(pigeonhole.base, pigeonhole.key)

  const targets: IngestTarget[] = [
    {
      name: 'pigeonhole',
      pid: pigeonhole.child.pid,
      smtpPort: pigeonhole.smtpPort,
      async prepare() {
        const inbox = await api.createInbox()
        return { to: inbox.address, stored: () => api.countMessages(inbox.id) }
      },
    },
    {
      name: 'maildev',
      pid: maildev.child.pid,
      smtpPort: maildev.smtpPort,
      // Emptied before each round so its in-memory list does not grow across rounds.
      async prepare() {
        await maildev.clear()
        await waitQuiet(maildev.child.pid)
        return { to: 'ingest@bench.test', stored: () => maildev.count() }
      },
    },
    {
      name: 'smtp_sink',
      pid: sink.child.pid,
      smtpPort: sink.smtpPort,
      async prepare() {
        const before = await sink.count()
        return { to: 'ingest@bench.test', stored: async () => (await sink.count()) - before }
      },
    },
  ]

  const ingest: IngestRound[] = []
  for (const shape of Object.values(shapes)) {
    // One discarded round per target and shape: JIT, parse workers (started on demand) and
    // socket buffers warm up, as they would be in a server that has been running.
    for (const target of targets) await ingestRound(target, shape, settings.warmUpMs)
    for (let round = 1; round <= settings.ingestRounds; round++) {
      for (const target of targets) {
        const result = await ingestRound(target, shape, settings.ingestMs)
        ingest.push(result)
        log(
          `ingest ${shape.name} round ${round} ${target.name}: ${Math.round(result.perSecond)} msg/s, ${result.cpuMsPerMessage.toFixed(2)} ms CPU/msg (${result.mainThreadCpuMsPerMessage.toFixed(2)} main thread), stored ${result.stored}/${result.accepted}`,
        )
      }
    }
  }

  const latency = { pigeonhole: [] as number[], maildev: [] as number[] }
  await maildev.clear()
  for (let round = 1; round <= settings.latencyRounds; round++) {
    latency.pigeonhole.push(
      ...(await pigeonholeLatency(api, pigeonhole.smtpPort, shapes.text_2kb, settings.latencySamples)),
    )
    latency.maildev.push(
      ...(await maildevLatency(maildev.base, maildev.smtpPort, shapes.text_2kb, settings.latencySamples)),
    )
    log(`latency round ${round} done`)
  }

  // A new connection per message, the two shapes a test usually sends, targets alternating.
  const endToEndShapes = [shapes.text_2kb, shapes.html_30kb]
  const endToEnd = Object.fromEntries(
    endToEndShapes.map((shape) => [shape.name, { pigeonhole: emptySamples(), maildev: emptySamples() }]),
  )
  await maildev.clear()
  for (let round = 1; round <= settings.endToEndRounds; round++) {
    for (const shape of endToEndShapes) {
      await pigeonholeEndToEnd(
        api,
        pigeonhole.smtpPort,
        shape,
        settings.endToEndSamples,
        endToEnd[shape.name]!.pigeonhole,
      )
      await maildevEndToEnd(
        maildev.base,
        maildev.smtpPort,
        shape,
        settings.endToEndSamples,
        endToEnd[shape.name]!.maildev,
      )
    }
    log(`end-to-end round ${round} done`)
  }

  log('API reads')
  const reads = await readsPhase(
    { api, smtpPort: pigeonhole.smtpPort, pid: pigeonhole.child.pid },
    maildev,
    shapes.text_2kb,
    {
      rounds: settings.readRounds,
      durationMs: settings.readMs,
      warmUpMs: settings.warmUpMs,
    },
  )
  await stopAll()

  log(
    `memory and start-up: ${settings.messages} messages of ${shapes.html_30kb.label}, ${settings.longPolls} long polls`,
  )
  const memory = await memoryPhase(shapes.html_30kb, settings)

  log(
    `capacity: database grown to ${settings.capacitySteps.map((n) => n.toLocaleString('en-US')).join(', ')} messages of ${shapes.text_2kb.label}`,
  )
  const capacity = await capacityPhase(shapes.text_2kb, {
    steps: settings.capacitySteps,
    ingestMs: settings.ingestMs,
    latencySamples: settings.latencySamples,
    sessions: settings.smtpSessions,
    log,
  })

  // PostgreSQL mode's building blocks on a throwaway local cluster; skipped where it is not installed.
  log('postgres: wake-ups across two pools, admission, slot leases, quota reservations, idempotency claims')
  const postgres = await postgresPhase({ ...settings.postgres, log })
  if ('skipped' in postgres) log(`postgres: skipped (${postgres.skipped})`)
  log('postgres servers: ingest with one and two machines, connect → content, wake-up across machines')
  const postgresServers = await postgresServersPhase(shapes.text_2kb, { ...settings.postgresServers, log })
  if ('skipped' in postgresServers) log(`postgres servers: skipped (${postgresServers.skipped})`)

  // Full mode only: it moves about 1.8 GB and needs a memory cgroup (root).
  let bigMailFlood: BigMailFloodResult = { skipped: 'quick mode' }
  if (!quick) {
    log('big-mail flood: 200 senders of 9 MiB into a 512 MiB memory cgroup')
    bigMailFlood = await bigMailFloodPhase({ senders: 200, messageMiB: 9, cgroupMiB: 512, log })
    log(`big-mail flood: ${JSON.stringify(bigMailFlood)}`)
  }

  const results = {
    mode: quick ? 'quick' : 'full',
    command: `${process.env.BENCH_SERVER_ENTRY ? `BENCH_SERVER_ENTRY=${process.env.BENCH_SERVER_ENTRY} ` : ''}bun run bench${quick ? ' --quick' : ''}`,
    finished_at: new Date().toISOString(),
    seconds: (performance.now() - t0) / 1000,
    machine: machine(),
    settings,
    shapes: Object.fromEntries(
      Object.values(shapes).map((shape) => [shape.name, { label: shape.label, bytes: shape.bytes }]),
    ),
    idle_rss_mib: idle,
    ingest,
    latency,
    end_to_end: endToEnd,
    reads,
    memory,
    capacity,
    postgres,
    postgres_servers: postgresServers,
    big_mail_flood: bigMailFlood,
  }
  const { text, summary } = summarizeRun(results)
  const dir = join(import.meta.dir, 'results')
  mkdirSync(dir, { recursive: true })
  const file = join(dir, quick ? 'latest-quick.json' : 'latest.json')
  writeFileSync(file, JSON.stringify({ ...results, summary }, null, 2))
  console.log(text)
  console.log(`\nRaw figures written to ${file}`)

  const missing = missingFigures(summary)
  const postgresIngest =
    'skipped' in postgresServers
      ? []
      : [
          ...postgresServers.ingest.one,
          ...postgresServers.ingest.two,
          ...postgresServers.sweep,
          ...postgresServers.sqlite,
        ]
  const unverified = [...ingest, ...postgresIngest].filter((round) => !round.verified)
  // .ci/run installs PostgreSQL and sets this, as for the tests: a broken install fails CI instead of skipping.
  const postgresMissing =
    process.env.PIGEONHOLE_REQUIRE_POSTGRES === '1' && ('skipped' in postgres || 'skipped' in postgresServers)
  if (missing.length > 0 || unverified.length > 0 || postgresMissing) {
    console.error(
      `Bench incomplete: missing figures ${missing.join(', ') || 'none'}; unverified ingest rounds ${unverified.length}${postgresMissing ? `; a PostgreSQL phase was skipped (${'skipped' in postgres ? postgres.skipped : 'skipped' in postgresServers ? postgresServers.skipped : ''})` : ''}`,
    )
    process.exit(1)
  }
} catch (error) {
  await stopAll().catch(() => {})
  throw error
}
