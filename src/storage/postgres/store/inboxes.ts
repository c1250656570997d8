/** The PostgreSQL side of InboxStore (../../port/inboxes.ts). */
import type { InboxStore } from '../../port/inboxes.ts'
import type { PostgresDb } from '../db.ts'

export function postgresInboxes(_db: PostgresDb): InboxStore {
  return {}
}
