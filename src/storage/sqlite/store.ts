/** The SQLite adapter of the storage port (../port.ts): one area per file under store/. */
import type { Store } from '../port.ts'
import type { Storage } from '../types.ts'
import { sqliteAccounts } from './store/accounts.ts'
import { sqliteInbound } from './store/inbound.ts'
import { sqliteInboxes } from './store/inboxes.ts'
import { sqliteMessages } from './store/messages.ts'
import { sqliteOrganizations } from './store/organizations.ts'

export function createSqliteStore(storage: Storage): Store {
  return {
    dialect: 'sqlite',
    // Nothing runs in the background and nothing is leased: one process owns the file.
    close: async () => {},
    organizations: sqliteOrganizations(storage),
    accounts: sqliteAccounts(storage),
    inboxes: sqliteInboxes(storage),
    messages: sqliteMessages(storage),
    inbound: sqliteInbound(storage),
  }
}
