/**
 * `cli db copy --to <postgres-url>`: moves a team from the SQLite file to PostgreSQL. The
 * server must be stopped (the copy takes the server's lock on the file, so a running server
 * is named and nothing is copied): mail accepted after the copy's snapshot would not be in it.
 * The SQLite file is migrated to the current schema first, the PostgreSQL database is migrated
 * (it must hold no rows yet), then every table is copied in one transaction and verified by
 * row counts and content hashes before it commits (src/storage/postgres/copy-from-sqlite.ts).
 */
import type { Config } from '../config.ts'
import { openStorage } from '../storage/database.ts'
import { openPostgres } from '../storage/postgres/client.ts'
import { CopyMismatch, copyFromSqlite, SourceSchemaMismatch, TargetNotEmpty } from '../storage/postgres/copy-from-sqlite.ts'
import { migratePostgres } from '../storage/postgres/migrate.ts'
import { DatabaseInUseError, lockServerDatabase } from '../storage/server-lock.ts'

/** The URL as it may be printed: user, host, port and database, never the password. */
export function describePostgresUrl(url: string): string {
  try {
    const parsed = new URL(url)
    return `${parsed.protocol}//${parsed.username ? `${decodeURIComponent(parsed.username)}@` : ''}${parsed.host}${parsed.pathname}`
  } catch {
    return '(an unreadable URL)'
  }
}

export const isPostgresUrl = (value: string): boolean => /^postgres(ql)?:\/\/./.test(value)

export async function copyToPostgresCommand(config: Config, url: string | undefined, fail: (message: string, code?: number) => never): Promise<void> {
  if (!url || !isPostgresUrl(url)) fail('usage: bun src/cli.ts db copy --to postgres://user:password@host:5432/database', 64)
  const target = describePostgresUrl(url)
  let lock: ReturnType<typeof lockServerDatabase>
  try {
    lock = lockServerDatabase(config.databasePath)
  } catch (error) {
    if (error instanceof DatabaseInUseError) fail(`${error.message} Copy only from a stopped server: mail accepted after the copy starts would be left behind.`)
    throw error
  }
  try {
    // The copy reads the current schema only; the server's own start migrates the same way.
    openStorage(config.databasePath).close()
    console.error(`migrating ${target}`)
    await migratePostgres(url)
    const sql = openPostgres(url, { max: 1 })
    try {
      const report = await copyFromSqlite(config.databasePath, sql)
      console.log('table\trows\tsha256')
      for (const table of report.tables) console.log(`${table.table}\t${table.rows}\t${table.sha256}`)
      const rows = report.tables.reduce((sum, table) => sum + table.rows, 0)
      console.log(`copied and verified ${rows} rows into ${target}`)
    } finally {
      await sql.end()
    }
  } catch (error) {
    if (error instanceof TargetNotEmpty || error instanceof SourceSchemaMismatch || error instanceof CopyMismatch) fail(`copy refused: ${error.message}`)
    // Connection and authentication failures: postgres.js names the cause; the URL is not repeated.
    fail(`copy failed, nothing was kept in ${target}: ${error instanceof Error ? error.message : String(error)}`)
  } finally {
    lock.release()
  }
}
