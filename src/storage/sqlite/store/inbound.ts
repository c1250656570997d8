/** The SQLite side of InboundStore (../../port/inbound.ts). */
import type { InboundStore } from '../../port/inbound.ts'
import type { Storage } from '../../types.ts'

export function sqliteInbound(_storage: Storage): InboundStore {
  return {}
}
