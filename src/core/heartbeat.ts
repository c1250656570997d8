/**
 * One row in `settings` (`readiness_heartbeat`, the time of the last write) that the server
 * rewrites to prove a commit can succeed (/ready) and to give Litestream something to copy.
 */
import type { DbOrTx } from '../storage/database.ts'
import { settings } from '../storage/schema.ts'

export const HEARTBEAT_SETTING = 'readiness_heartbeat'

export function writeHeartbeat(tx: DbOrTx, now: number): void {
  const value = new Date(now).toISOString()
  tx.insert(settings).values({ name: HEARTBEAT_SETTING, value }).onConflictDoUpdate({ target: settings.name, set: { value } }).run()
}
