/**
 * The PostgreSQL phase alone (a throwaway local cluster; nothing to build first), with the
 * figures as JSON on stdout:
 *
 *   bun bench/tools/postgres-phase.ts [--quick]
 */
import { POSTGRES_FULL, POSTGRES_QUICK, postgresPhase } from '../phases/postgres.ts'

const t0 = performance.now()
const log = (message: string) => console.error(`[postgres ${((performance.now() - t0) / 1000).toFixed(1)}s] ${message}`)
const settings = process.argv.includes('--quick') ? POSTGRES_QUICK : POSTGRES_FULL
const result = await postgresPhase({ ...settings, log })
if ('skipped' in result) log(`skipped (${result.skipped})`)
console.log(JSON.stringify(result, null, 2))
// The cluster's watcher stops the server once this process has gone.
process.exit(0)
