/**
 * The whole move of a SQLite file into an empty PostgreSQL database, as `cli db copy --to`
 * runs it: the server's lock on the file is taken first (a running server is named and
 * nothing is copied: mail accepted after the snapshot would be left behind), the file is
 * migrated to the current schema, the PostgreSQL database is migrated, then copyFromSqlite
 * copies and verifies everything in one transaction.
 */
import { openStorage } from '../database.ts'
import { DatabaseInUseError, lockServerDatabase } from '../server-lock.ts'
import { describePostgresUrl, openPostgres } from './client.ts'
import {
  type CopyProgress,
  type CopyReport,
  CopyMismatch,
  copyFromSqlite,
  SourceSchemaMismatch,
  TargetNotEmpty,
} from './copy-from-sqlite.ts'
import { migratePostgres } from './migrate.ts'

/** Why nothing was copied, in words an operator acts on; the URL's password never appears. */
export class CopyRefused extends Error {}

export async function copySqliteFileToPostgres(
  databasePath: string,
  url: string,
  progress: (line: string) => void = () => {},
  onProgress?: (progress: CopyProgress) => void,
): Promise<CopyReport> {
  const target = describePostgresUrl(url)
  let lock: ReturnType<typeof lockServerDatabase>
  try {
    lock = lockServerDatabase(databasePath)
  } catch (error) {
    if (error instanceof DatabaseInUseError)
      throw new CopyRefused(
        `${error.message} Copy only from a stopped server: mail accepted after the copy starts would be left behind.`,
      )
    throw error
  }
  try {
    // The copy reads the current schema only; the server's own start migrates the same way.
    openStorage(databasePath).close()
    progress(`migrating ${target}`)
    await migratePostgres(url)
    const sql = openPostgres(url, { max: 1 })
    try {
      progress(
        `copying ${databasePath} into ${target} (one transaction; nothing is kept until every table is verified)`,
      )
      return await copyFromSqlite(databasePath, sql, { onProgress })
    } finally {
      await sql.end()
    }
  } catch (error) {
    if (error instanceof TargetNotEmpty || error instanceof SourceSchemaMismatch || error instanceof CopyMismatch)
      throw new CopyRefused(`copy refused: ${error.message}`)
    // Connection and authentication failures: postgres.js names the cause; the URL is not repeated.
    throw new CopyRefused(
      `copy failed, nothing was kept in ${target}: ${error instanceof Error ? error.message : String(error)}`,
    )
  } finally {
    lock.release()
  }
}
