/** The PostgreSQL side of InboundStore (../../port/inbound.ts). */
import type { InboundStore } from '../../port/inbound.ts'
import type { PostgresDb } from '../db.ts'

export function postgresInbound(_db: PostgresDb): InboundStore {
  return {}
}
