/**
 * One PostgreSQL-mode machine under load, from source (names readable) and under Bun's CPU
 * profiler: `connections` SMTP connections (each to an inbox of its own, over eight
 * organisations) send 2 KB mail for `seconds`; prints messages a second and the server's and
 * the cluster's CPU per message, and writes the Markdown profile to BENCH_CPU_PROF_DIR
 * (default: a temp dir). `--no-prof` measures without the profiler.
 *
 *   bun bench/tools/postgres-profile.ts [connections=16] [seconds=5] [organizations=8] [--no-prof] [--statements]
 *
 * `--statements` loads pg_stat_statements into the throwaway cluster and prints, for the
 * measured round, every statement's calls, mean and total execution time per stored message.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { freshDatabase, testCluster, useDurableCluster } from '../../test/support/postgres.ts'
import { buildShapes } from '../lib/messages.ts'
import { freePort } from '../lib/proc.ts'
import { seed, startMachine } from '../phases/postgres-servers.ts'
import { sweepRound } from '../phases/postgres-sweep.ts'

const [connections = 16, seconds = 5, organizations = 8] = process.argv
  .slice(2)
  .filter((arg) => !arg.startsWith('--'))
  .map(Number)
if (!process.argv.includes('--no-prof'))
  process.env.BENCH_CPU_PROF_DIR ??= mkdtempSync(join(tmpdir(), 'pigeonhole-pg-profile-'))
const entry = process.env.BENCH_SERVER_ENTRY ?? 'src/index.ts'

const statements = process.argv.includes('--statements')
if (statements) process.env.BENCH_POSTGRES_OPTIONS ??= '-c shared_preload_libraries=pg_stat_statements'
useDurableCluster()
const port = testCluster().port
const url = await freshDatabase()
const keys = seed(url, organizations)
const machine = await startMachine('profiled', entry, url, keys[0]!, [await freePort(), await freePort()])
try {
  const shape = buildShapes().text_2kb
  await sweepRound([machine, machine], keys, 4, shape, 500, port)
  const stats = statements ? postgres(url, { max: 1, onnotice: () => {} }) : null
  if (stats)
    await stats`create extension if not exists pg_stat_statements`.then(() => stats`select pg_stat_statements_reset()`)
  const result = await sweepRound([machine, machine], keys, connections, shape, seconds * 1000, port)
  console.log(JSON.stringify(result))
  if (stats) {
    // Per stored message: how often each statement ran and the database's time in it (parse and
    // plan are not in total_exec_time; BEGIN/COMMIT's flush waits are).
    const rows = await stats<{ calls: string; mean: number; total: number; query: string }[]>`
      select calls, mean_exec_time as mean, total_exec_time as total, query from pg_stat_statements
      where dbid = (select oid from pg_database where datname = current_database())
      order by total_exec_time desc`
    const per = result.accepted
    let calls = 0
    let total = 0
    for (const row of rows) {
      calls += Number(row.calls)
      total += row.total
      const text = row.query.replace(/\s+/g, ' ').slice(0, 110)
      console.log(
        `${(Number(row.calls) / per).toFixed(2).padStart(6)} calls/msg  mean ${row.mean.toFixed(3).padStart(7)} ms  ` +
          `${(row.total / per).toFixed(3).padStart(6)} ms/msg  ${text}`,
      )
    }
    console.log(`total: ${(calls / per).toFixed(2)} statements/msg, ${(total / per).toFixed(3)} ms execution/msg`)
    await stats.end()
  }
} finally {
  await machine.stop()
}
if (process.env.BENCH_CPU_PROF_DIR) console.error(`profile in ${process.env.BENCH_CPU_PROF_DIR}`)
process.exit(0)
