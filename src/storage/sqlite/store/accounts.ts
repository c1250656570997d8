/** The SQLite side of AccountStore (../../port/accounts.ts). */
import type { AccountStore } from '../../port/accounts.ts'
import type { Storage } from '../../types.ts'

export function sqliteAccounts(_storage: Storage): AccountStore {
  return {}
}
