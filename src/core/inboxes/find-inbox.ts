import { and, eq } from 'drizzle-orm'
import type { DbOrTx } from '../../storage/database.ts'
import { inboxes } from '../../storage/schema.ts'
import { ID_PATTERNS } from '../../ids.ts'
import type { Principal } from '../api-keys.ts'
import { DomainError } from '../errors.ts'

/** The caller's active inbox, or 404: unknown, deleted and foreign ids answer alike. */
export function findActiveInbox(db: DbOrTx, principal: Principal, inboxId: string): typeof inboxes.$inferSelect {
  const row = ID_PATTERNS.inbox.test(inboxId)
    ? db
        .select()
        .from(inboxes)
        .where(and(eq(inboxes.id, inboxId), eq(inboxes.organizationId, principal.organizationId), eq(inboxes.state, 'active')))
        .get()
    : undefined
  if (!row) throw new DomainError('inbox_not_found', 'No inbox with this id.')
  return row
}
