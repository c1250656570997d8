/** The PostgreSQL side of AccountStore (../../port/accounts.ts). */
import type { AccountStore } from '../../port/accounts.ts'
import type { PostgresDb } from '../db.ts'

export function postgresAccounts(_db: PostgresDb): AccountStore {
  return {}
}
