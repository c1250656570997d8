/** The PostgreSQL adapter of the storage port (../port.ts): one area per file under store/. */
import type { Store } from '../port.ts'
import type { Sql } from './client.ts'
import { postgresDb } from './db.ts'
import { postgresAccounts } from './store/accounts.ts'
import { type HoldConverter, postgresInbound } from './store/inbound.ts'
import { postgresInboxes } from './store/inboxes.ts'
import { postgresMessages } from './store/messages.ts'
import { postgresOrganizations } from './store/organizations.ts'

export interface PostgresStoreOptions {
  /** This process's name in the lease rows the store writes (lease-holder.ts). */
  holder: string
  /**
   * Converts the units admission holds in the database (see
   * store/inbound.ts); null for a store that admits no mail (the CLI, tests).
   */
  quota?: HoldConverter | null
}

export function createPostgresStore(sql: Sql, { holder, quota = null }: PostgresStoreOptions): Store {
  const db = postgresDb(sql)
  const inboxes = postgresInboxes(db, holder)
  return {
    dialect: 'postgres',
    organizations: postgresOrganizations(db),
    accounts: postgresAccounts(db),
    inboxes,
    messages: postgresMessages(db),
    inbound: postgresInbound(db, sql, quota),
    close: () => inboxes.close(),
  }
}
