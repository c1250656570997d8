/**
 * One PostgreSQL-mode machine under load, from source (names readable) and under Bun's CPU
 * profiler: `connections` SMTP connections (each to an inbox of its own, over eight
 * organisations) send 2 KB mail for `seconds`; prints messages a second and the server's and
 * the cluster's CPU per message, and writes the Markdown profile to BENCH_CPU_PROF_DIR
 * (default: a temp dir). `--no-prof` measures without the profiler.
 *
 *   bun bench/tools/postgres-profile.ts [connections=16] [seconds=5] [--no-prof]
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freshDatabase, testCluster, useDurableCluster } from '../../test/support/postgres.ts'
import { buildShapes } from '../lib/messages.ts'
import { freePort } from '../lib/proc.ts'
import { seed, startMachine } from '../phases/postgres-servers.ts'
import { sweepRound } from '../phases/postgres-sweep.ts'

const [connections = 16, seconds = 5] = process.argv
  .slice(2)
  .filter((arg) => !arg.startsWith('--'))
  .map(Number)
if (!process.argv.includes('--no-prof'))
  process.env.BENCH_CPU_PROF_DIR ??= mkdtempSync(join(tmpdir(), 'pigeonhole-pg-profile-'))
const entry = process.env.BENCH_SERVER_ENTRY ?? 'src/index.ts'

useDurableCluster()
const port = testCluster().port
const url = await freshDatabase()
const keys = seed(url, 8)
const machine = await startMachine('profiled', entry, url, keys[0]!, [await freePort(), await freePort()])
try {
  const shape = buildShapes().text_2kb
  await sweepRound([machine, machine], keys, 4, shape, 500, port)
  const result = await sweepRound([machine, machine], keys, connections, shape, seconds * 1000, port)
  console.log(JSON.stringify(result))
} finally {
  await machine.stop()
}
if (process.env.BENCH_CPU_PROF_DIR) console.error(`profile in ${process.env.BENCH_CPU_PROF_DIR}`)
process.exit(0)
