/**
 * Connect → content alone, the PostgreSQL server against the SQLite one in one sitting (run
 * `bun run build` first, or set BENCH_SERVER_ENTRY=src/index.ts):
 *
 *   bun bench/tools/connect-to-content.ts [--rounds=4] [--samples=100] [--postgres-only] [--baseline=DIR]
 *
 * `--baseline=DIR` adds a second PostgreSQL server running DIR/server.js (a copy of another
 * build's dist/ folder), on a database of its own, in the same rounds: before and after a
 * change in one sitting.
 *
 * The method of the end-to-end phase (bench/phases/end-to-end.ts): a long poll with
 * include=content waits on a fresh inbox, a new SMTP connection delivers one 2 KB message, the
 * sample ends when the poll's answer is read. The two servers take turns round by round, so a
 * machine whose load changes mid-run weighs on both alike; the load average is printed with
 * every round. The PostgreSQL server runs on the bench's throwaway cluster with PostgreSQL's
 * default durability (fsync and synchronous_commit on; printed at the start). Figures as JSON
 * on stdout.
 */
import { loadavg } from 'node:os'
import { resolve } from 'node:path'
import { freshDatabase, testCluster } from '../../test/support/postgres.ts'
import { buildShapes } from '../lib/messages.ts'
import { PigeonholeApi } from '../lib/pigeonhole-api.ts'
import { freePort } from '../lib/proc.ts'
import { startPigeonhole, SERVER_ENTRY } from '../lib/targets.ts'
import { emptySamples, pigeonholeEndToEnd } from '../phases/end-to-end.ts'
import { summarize } from '../phases/latency.ts'
import { durabilityOf, type Machine, seed, startMachine } from '../phases/postgres-servers.ts'
import { useDurableCluster } from '../../test/support/postgres.ts'

const option = (name: string, fallback: number) =>
  Number(process.argv.find((arg) => arg.startsWith(`--${name}=`))?.split('=')[1] ?? fallback)
const rounds = option('rounds', 4)
const samples = option('samples', 100)
const postgresOnly = process.argv.includes('--postgres-only')
const baseline = process.argv.find((arg) => arg.startsWith('--baseline='))?.slice('--baseline='.length)

const t0 = performance.now()
const log = (message: string) =>
  console.error(`[connect→content ${((performance.now() - t0) / 1000).toFixed(1)}s] ${message}`)
const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')
const shape = buildShapes().text_2kb

useDurableCluster()
testCluster()
const url = await freshDatabase()
const durability = await durabilityOf(url)
log(`cluster: fsync=${durability.fsync}, synchronous_commit=${durability.synchronousCommit}; server ${SERVER_ENTRY}`)
const [key] = seed(url) as [string]
const postgres = await startMachine('A', SERVER_ENTRY, url, key, [await freePort(), await freePort()])
const sqlite = postgresOnly ? null : await startPigeonhole()
const targets = [
  { name: 'postgres', api: postgres.api, smtpPort: postgres.smtpPort, samples: emptySamples(), loads: [] as string[] },
]
let before: Machine | null = null
if (baseline) {
  const baselineUrl = await freshDatabase()
  before = await startMachine('baseline', resolve(baseline, 'server.js'), baselineUrl, seed(baselineUrl)[0]!, [
    await freePort(),
    await freePort(),
  ])
  targets.push({
    name: 'postgres_baseline',
    api: before.api,
    smtpPort: before.smtpPort,
    samples: emptySamples(),
    loads: [],
  })
}
if (sqlite)
  targets.push({
    name: 'sqlite',
    api: new PigeonholeApi(sqlite.base, sqlite.key),
    smtpPort: sqlite.smtpPort,
    samples: emptySamples(),
    loads: [],
  })

try {
  for (let round = 1; round <= rounds; round++) {
    // A B, then B A: the order alternates so neither target always runs first.
    const order = round % 2 === 1 ? targets : [...targets].reverse()
    for (const target of order) {
      const before = target.samples.connect.length
      await pigeonholeEndToEnd(target.api, target.smtpPort, shape, samples, target.samples)
      const mine = summarize(target.name, target.samples.connect.slice(before))
      target.loads.push(load())
      log(
        `round ${round} ${target.name}: p50 ${mine.p50Ms.toFixed(2)} ms, p99 ${mine.p99Ms.toFixed(2)} ms (load ${load()})`,
      )
    }
  }
  const result = {
    durability,
    entry: SERVER_ENTRY,
    targets: targets.map((target) => ({
      connect: summarize(target.name, target.samples.connect),
      mail: summarize(target.name, target.samples.mail),
      reply: summarize(target.name, target.samples.reply),
      loads: target.loads,
    })),
  }
  for (const { connect, mail, reply } of result.targets)
    log(
      `${connect.target}: connect → content p50 ${connect.p50Ms.toFixed(2)} / p90 ${connect.p90Ms.toFixed(2)} / p99 ${connect.p99Ms.toFixed(2)} ms; MAIL FROM → content p50 ${mail.p50Ms.toFixed(2)}; 250 → content p50 ${reply.p50Ms.toFixed(2)} (n=${connect.samples})`,
    )
  console.log(JSON.stringify(result, null, 2))
} finally {
  await Promise.all([postgres.stop(), sqlite?.stop(), before?.stop()])
}
// The cluster's watcher stops the server once this process has gone.
process.exit(0)
