/** The PostgreSQL side of MessageStore (../../port/messages.ts). */
import type { MessageStore } from '../../port/messages.ts'
import type { PostgresDb } from '../db.ts'

export function postgresMessages(_db: PostgresDb): MessageStore {
  return {}
}
