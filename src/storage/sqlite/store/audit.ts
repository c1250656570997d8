/** Writes an audit row inside the caller's transaction (every operation that audits a change). */
import type { AuditEntry } from '../../port/audit-entry.ts'
import { auditEvents } from '../schema.ts'
import type { DbOrTx } from '../../types.ts'

export function insertAudit(tx: DbOrTx, entry: AuditEntry | null): void {
  if (entry) tx.insert(auditEvents).values(entry).run()
}
