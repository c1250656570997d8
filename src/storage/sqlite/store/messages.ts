/** The SQLite side of MessageStore (../../port/messages.ts). */
import type { MessageStore } from '../../port/messages.ts'
import type { Storage } from '../../types.ts'

export function sqliteMessages(_storage: Storage): MessageStore {
  return {}
}
