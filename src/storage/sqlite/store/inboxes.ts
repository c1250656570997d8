/** The SQLite side of InboxStore (../../port/inboxes.ts). */
import type { InboxStore } from '../../port/inboxes.ts'
import type { Storage } from '../../types.ts'

export function sqliteInboxes(_storage: Storage): InboxStore {
  return {}
}
