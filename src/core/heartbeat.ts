/**
 * One row in `settings` (`readiness_heartbeat`, the time of the last write) that the server
 * rewrites to prove a commit can succeed (/ready) and to give Litestream something to copy.
 */
import type { DbOrTx } from '../storage/database.ts'
import { settings } from '../storage/schema.ts'
import type { Services } from './services.ts'
import { transactionInGroup } from './transaction.ts'

export const HEARTBEAT_SETTING = 'readiness_heartbeat'

function writeHeartbeat(tx: DbOrTx, now: number): void {
  const value = new Date(now).toISOString()
  tx.insert(settings).values({ name: HEARTBEAT_SETTING, value }).onConflictDoUpdate({ target: settings.name, set: { value } }).run()
}

/** Rewrites the heartbeat as a job of the group commit; settles once it is durable. */
export function recordHeartbeat(s: Pick<Services, 'storage' | 'clock'>): Promise<void> {
  return transactionInGroup(s, (tx) => writeHeartbeat(tx, s.clock.now()))
}

/**
 * A real write of the heartbeat, committed through the same storage path as every other write
 * (taking the write lock alone proves nothing: on a volume remounted read-only SQLite still
 * takes its locks, which live in shared memory, and only the write of a page fails).
 * Another process's lock (the CLI) is not waited for: 'busy' means it was held at this moment,
 * and does not begin a failing state; any other failure is told to the storage observer like
 * the failure of a real write ('failed').
 */
export function probeHeartbeatWrite(s: Pick<Services, 'storage' | 'clock'>): 'committed' | 'busy' | 'failed' {
  const { sqlite } = s.storage
  const { timeout } = sqlite.query('PRAGMA busy_timeout').get() as { timeout: number }
  try {
    sqlite.exec('PRAGMA busy_timeout = 0')
    // Not through storage.write, whose observer would count a busy lock as a failed write.
    s.storage.db.transaction((tx) => writeHeartbeat(tx, s.clock.now()), { behavior: 'immediate' })
    s.storage.observer.committed()
    return 'committed'
  } catch (error) {
    if ((error as { code?: string }).code?.startsWith('SQLITE_BUSY')) return 'busy'
    s.storage.observer.failed(error) // logged once when the failing state begins, not per probe
    return 'failed'
  } finally {
    sqlite.exec(`PRAGMA busy_timeout = ${Number(timeout)}`)
  }
}

/** One read of the database, so /health fails when the file cannot be read. */
export function touchDatabase(s: Pick<Services, 'storage'>): void {
  s.storage.sqlite.query('SELECT 1').get()
}
