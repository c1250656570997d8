/**
 * Start-up entry of the Docker image (`bun src/entry.ts`; plain `bun run start` skips it).
 *
 * LITESTREAM_REPLICA=none: runs the server. Otherwise: if the database file is missing,
 * restores it from the replica (when one exists), then runs the server under
 * `litestream replicate -exec`, which streams every commit to the replica and, when the
 * server exits (SIGTERM is passed on to it), syncs the last writes before exiting.
 */
import { existsSync, rmSync } from 'node:fs'
import { exitOnConfigError, loadConfigOrExit } from './config.ts'
import { prepareFolders } from './deploy/privileges.ts'
import { freeLoopbackPort, replicationPlan, serverScript } from './deploy/replica.ts'
import { runChild } from './deploy/supervise.ts'

function fail(message: string, code: number): never {
  console.error(message)
  process.exit(code)
}

const config = loadConfigOrExit()
// Litestream's metrics listener needs a port the server can be told before either starts.
const metricsPort =
  config.litestreamReplica === 'none' || config.litestreamMetricsPort > 0
    ? config.litestreamMetricsPort
    : await freeLoopbackPort()
const plan = exitOnConfigError(() => replicationPlan(config, process.env, metricsPort))

const user = prepareFolders(config)
// A stop asked for while the restore runs must not go on to start the server.
let stopAsked = false
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => (stopAsked = true))

if (!plan) process.exit(await runChild([process.execPath, serverScript(config)], { env: process.env, user }))

if (!existsSync(plan.databasePath)) {
  // A -wal or -shm left without its database belongs to a file that is gone; SQLite
  // would replay that stale WAL onto the restored copy.
  for (const suffix of ['-wal', '-shm']) rmSync(plan.databasePath + suffix, { force: true })
  const restored = await runChild([plan.binary, ...plan.restoreArgs], { env: plan.env, user })
  if (restored !== 0) fail(`litestream restore failed (exit ${restored}); refusing to start on an empty database`, 1)
  if (stopAsked) process.exit(0)
}
// Litestream 0.3 opens the database on its first monitor tick, one second after it starts;
// stopped before that, it exits without syncing anything. Holding an early SIGTERM for
// two seconds makes even a stop right after boot push its writes to the replica.
process.exit(await runChild([plan.binary, ...plan.replicateArgs], { env: plan.env, user, minUptimeMs: 2_000 }))
