/**
 * Migrating PostgreSQL exactly once when several machines start at the same moment. Drizzle's
 * migrator reads the last applied migration and then applies the newer ones in a transaction;
 * two machines doing that at once would both see "nothing applied" and both try. So each
 * machine first waits for one advisory lock: the first applies the migrations, the others
 * then find them applied and do nothing.
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { drizzle } from 'drizzle-orm/postgres-js'
import { migrate } from 'drizzle-orm/postgres-js/migrator'
import { openPostgres, type Sql } from './client.ts'

const MIGRATE_LOCK = 'pigeonhole.migrate'

/** drizzle/postgres/ at the repository root (three folders up), or beside dist/ in the bundle. */
export function postgresMigrationsFolder(): string {
  const candidates = [
    join(import.meta.dir, '..', '..', '..', 'drizzle', 'postgres'),
    join(import.meta.dir, '..', 'drizzle', 'postgres'),
  ]
  const found = candidates.find((folder) => existsSync(join(folder, 'meta', '_journal.json')))
  if (!found) throw new Error(`PostgreSQL migrations not found (looked in ${candidates.join(', ')})`)
  return found
}

async function appliedCount(sql: Sql): Promise<number> {
  const [table] = await sql<
    { found: string | null }[]
  >`select to_regclass('drizzle.__drizzle_migrations')::text as found`
  if (!table?.found) return 0
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from drizzle.__drizzle_migrations`
  return row?.n ?? 0
}

/**
 * Brings the database at `url` up to the newest migration. Returns how many migrations this
 * call applied: across machines starting together, one call applies them all and the rest 0.
 */
export async function migratePostgres(
  url: string,
  migrationsFolder = postgresMigrationsFolder(),
): Promise<{ applied: number }> {
  // A pool of one connection: the lock is the session's, and the migration must run in that
  // session. Ending the pool ends the session, which releases the lock even if a step failed.
  const sql = openPostgres(url, { max: 1 })
  try {
    await sql`select pg_advisory_lock(hashtextextended(${MIGRATE_LOCK}, 0))`
    const before = await appliedCount(sql)
    await migrate(drizzle(sql), { migrationsFolder })
    const applied = (await appliedCount(sql)) - before
    await sql`select pg_advisory_unlock(hashtextextended(${MIGRATE_LOCK}, 0))`
    return { applied }
  } finally {
    await sql.end()
  }
}
