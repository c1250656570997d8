/**
 * `bun run bench:compare <git-ref>`: this checkout against an earlier one, in one run on one
 * machine, so "before and after a change" is measured under the same conditions. The ref is
 * checked out into a temporary worktree, installed and built there; both production bundles
 * run as real child processes on fresh databases, and the phases alternate between them in
 * the order A B B A (then B A A B…) so a machine that slows down mid-run weighs on both alike:
 *
 * - ingest: 2 KB messages over 8 SMTP connections (messages a second, CPU per message);
 * - connect → content: a long poll waiting, a new SMTP connection delivering one message, the
 *   time from connecting to the poll's answer with the content (p50, p99);
 * - list reads: the list of 50 messages under 16 concurrent clients (requests a second).
 *
 * Each figure is the median of its rounds; "spread" is the largest over the smallest round of
 * the same build, the noise a ratio must clear to mean anything.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { httpLoad } from './lib/http-load.ts'
import { headersFor, buildShapes } from './lib/messages.ts'
import { PigeonholeApi } from './lib/pigeonhole-api.ts'
import { SmtpClient } from './lib/smtp-client.ts'
import { median, percentile, round as rounded, sleep } from './lib/stats.ts'
import { ROOT, startPigeonhole, type PigeonholeProcess } from './lib/targets.ts'
import { emptySamples, pigeonholeEndToEnd } from './phases/end-to-end.ts'
import { ingestRound } from './phases/ingest.ts'

const args = process.argv.slice(2)
const ref = args.find((arg) => !arg.startsWith('--'))
const rounds = Number(args.find((arg) => arg.startsWith('--rounds='))?.slice('--rounds='.length) ?? 3)
if (!ref || !Number.isInteger(rounds) || rounds < 1) {
  console.error('usage: bun run bench:compare <git-ref> [--rounds=N]   (this checkout against <git-ref>)')
  process.exit(64)
}

const INGEST_MS = 2000
const END_TO_END_SAMPLES = 60
const READ_MS = 2000
const LIST_SIZE = 50

function run(cmd: string[], cwd: string): string {
  const result = Bun.spawnSync({ cmd, cwd, stdout: 'pipe', stderr: 'pipe' })
  if (result.exitCode !== 0) throw new Error(`${cmd.join(' ')} failed in ${cwd}: ${result.stderr.toString()}`)
  return result.stdout.toString().trim()
}

const log = (message: string) => console.error(`[compare] ${message}`)
const commit = run(['git', 'rev-parse', '--short', ref], ROOT)
const baselineDir = mkdtempSync(join(tmpdir(), 'pigeonhole-baseline-'))
log(`building ${ref} (${commit}) in a temporary worktree`)
run(['git', 'worktree', 'add', '--detach', baselineDir, commit], ROOT)

interface Build {
  name: string
  server: PigeonholeProcess
  api: PigeonholeApi
  listUrl: string
  ingest: Array<{ perSecond: number; cpuMsPerMessage: number }>
  connectToContent: number[]
  listPerSecond: number[]
}

const shapes = buildShapes()
const builds: Build[] = []
try {
  run([process.execPath, 'install', '--frozen-lockfile'], baselineDir)
  run([process.execPath, 'run', 'build'], baselineDir)
  for (const [name, root] of [
    [`before (${commit})`, baselineDir],
    ['after (this checkout)', ROOT],
  ] as const) {
    const server = await startPigeonhole(undefined, root)
    const api = new PigeonholeApi(server.base, server.key)
    // The list read: one inbox holding 50 messages, as the full bench's reads phase.
    const inbox = await api.createInbox()
    const client = await SmtpClient.connect(server.smtpPort)
    for (let i = 0; i < LIST_SIZE; i++) {
      const reply = await client.send(
        'sender@bench.example',
        inbox.address,
        headersFor(shapes.text_2kb, inbox.address),
        shapes.text_2kb.body,
      )
      if (reply.code !== 250) throw new Error(`${name}: SMTP ${reply.code} ${reply.text}`)
    }
    client.close()
    builds.push({
      name,
      server,
      api,
      listUrl: `${server.base}/v1/inboxes/${inbox.id}/messages?limit=${LIST_SIZE}`,
      ingest: [],
      connectToContent: [],
      listPerSecond: [],
    })
  }

  const measure = async (build: Build, warm: boolean) => {
    const target = {
      name: build.name,
      pid: build.server.child.pid,
      smtpPort: build.server.smtpPort,
      prepare: async () => {
        const inbox = await build.api.createInbox()
        return { to: inbox.address, stored: () => build.api.countMessages(inbox.id) }
      },
    }
    const ingest = await ingestRound(target, shapes.text_2kb, warm ? 300 : INGEST_MS)
    if (!ingest.verified) throw new Error(`${build.name}: ingest stored ${ingest.stored} of ${ingest.accepted}`)
    const samples = emptySamples()
    await pigeonholeEndToEnd(build.api, build.server.smtpPort, shapes.text_2kb, warm ? 5 : END_TO_END_SAMPLES, samples)
    const reads = await httpLoad(build.listUrl, {
      concurrency: 16,
      durationMs: warm ? 300 : READ_MS,
      headers: build.api.headers,
    })
    if (reads.errors > 0) throw new Error(`${build.name}: ${reads.errors} failed list reads`)
    if (warm) return
    build.ingest.push({ perSecond: ingest.perSecond, cpuMsPerMessage: ingest.cpuMsPerMessage })
    build.connectToContent.push(...samples.connect)
    build.listPerSecond.push(reads.perSecond)
    log(
      `${build.name}: ingest ${Math.round(ingest.perSecond)} msg/s, connect→content p50 ${median(samples.connect).toFixed(1)} ms, list ${Math.round(reads.perSecond)} req/s`,
    )
  }

  for (const build of builds) await measure(build, true)
  for (let r = 0; r < rounds; r++) {
    const order =
      r % 2 === 0 ? [builds[0]!, builds[1]!, builds[1]!, builds[0]!] : [builds[1]!, builds[0]!, builds[0]!, builds[1]!]
    for (const build of order) await measure(build, false)
    await sleep(200)
  }

  const spread = (values: number[]) => rounded(Math.max(...values) / Math.min(...values))
  const figures = builds.map((build) => ({
    build: build.name,
    ingest_per_second: Math.round(median(build.ingest.map((i) => i.perSecond))),
    ingest_spread: spread(build.ingest.map((i) => i.perSecond)),
    cpu_ms_per_message: rounded(median(build.ingest.map((i) => i.cpuMsPerMessage)), 3),
    connect_to_content_p50_ms: rounded(percentile(build.connectToContent, 50)),
    connect_to_content_p99_ms: rounded(percentile(build.connectToContent, 99)),
    list_per_second: Math.round(median(build.listPerSecond)),
    list_spread: spread(build.listPerSecond),
  }))
  const [before, after] = figures as [(typeof figures)[0], (typeof figures)[0]]
  const lines = [
    `| figure | ${before.build} | ${after.build} | after / before |`,
    '|---|---|---|---|',
    ...(
      [
        'ingest_per_second',
        'cpu_ms_per_message',
        'connect_to_content_p50_ms',
        'connect_to_content_p99_ms',
        'list_per_second',
      ] as const
    ).map((key) => `| ${key} | ${before[key]} | ${after[key]} | ${rounded(after[key] / before[key])} |`),
    `| round-to-round spread (ingest, list) | ${before.ingest_spread}, ${before.list_spread} | ${after.ingest_spread}, ${after.list_spread} | |`,
  ]
  console.log(lines.join('\n'))
  const dir = join(import.meta.dir, 'results')
  mkdirSync(dir, { recursive: true })
  writeFileSync(
    join(dir, 'compare.json'),
    JSON.stringify({ baseline: { ref, commit }, rounds, finished_at: new Date().toISOString(), figures }, null, 2),
  )
} finally {
  await Promise.all(builds.map((build) => build.server.stop()))
  run(['git', 'worktree', 'remove', '--force', baselineDir], ROOT)
  rmSync(baselineDir, { recursive: true, force: true })
}
