/** Writes an audit row inside the caller's transaction (every operation that audits a change). */
import type { AuditEntry } from '../../port/audit-entry.ts'
import type { PostgresDbOrTx } from '../db.ts'
import { auditEvents } from '../schema.ts'

export async function insertAudit(tx: PostgresDbOrTx, entry: AuditEntry | null): Promise<void> {
  if (entry) await tx.insert(auditEvents).values(entry)
}
