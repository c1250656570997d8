/**
 * PostgreSQL mode's server phase alone (one and two server processes on a throwaway local
 * cluster; run `bun run build` first), with the figures as JSON on stdout:
 *
 *   bun bench/tools/postgres-servers.ts [--quick]
 */
import { buildShapes } from '../lib/messages.ts'
import { POSTGRES_SERVERS_FULL, POSTGRES_SERVERS_QUICK, postgresServersPhase } from '../phases/postgres-servers.ts'

const t0 = performance.now()
const log = (message: string) =>
  console.error(`[postgres servers ${((performance.now() - t0) / 1000).toFixed(1)}s] ${message}`)
const settings = process.argv.includes('--quick') ? POSTGRES_SERVERS_QUICK : POSTGRES_SERVERS_FULL
const result = await postgresServersPhase(buildShapes().text_2kb, { ...settings, log })
if ('skipped' in result) log(`skipped (${result.skipped})`)
console.log(JSON.stringify(result, null, 2))
// The cluster's watcher stops the server once this process has gone.
process.exit(0)
