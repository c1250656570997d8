import { and, eq, sql } from 'drizzle-orm'
import { preparedPerDatabase } from '../../storage/prepared.ts'
import { inboxes } from '../../storage/schema.ts'
import { ID_PATTERNS } from '../../ids.ts'
import type { Principal } from '../api-keys/authenticate.ts'
import { DomainError } from '../errors.ts'
import type { Services } from '../services.ts'

const activeInbox = preparedPerDatabase((db) =>
  db
    .select()
    .from(inboxes)
    .where(and(eq(inboxes.id, sql.placeholder('inboxId')), eq(inboxes.organizationId, sql.placeholder('organizationId')), eq(inboxes.state, 'active')))
    .prepare(),
)

/** The caller's active inbox, or 404: unknown, deleted and foreign ids answer alike. */
export function findActiveInbox(s: Pick<Services, 'storage'>, principal: Principal, inboxId: string): typeof inboxes.$inferSelect {
  const row = ID_PATTERNS.inbox.test(inboxId) ? activeInbox(s.storage.db).get({ inboxId, organizationId: principal.organizationId }) : undefined
  if (!row) throw new DomainError('inbox_not_found', 'No inbox with this id.')
  return row
}
