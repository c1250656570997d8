import { ID_PATTERNS } from '../../ids.ts'
import type { InboxRow } from '../../storage/rows.ts'
import type { Principal } from '../api-keys/authenticate.ts'
import { DomainError } from '../common/errors.ts'
import type { Services } from '../common/services.ts'

/** The caller's active inbox, or 404: unknown, deleted and foreign ids answer alike. */
export async function findActiveInbox(
  s: Pick<Services, 'store'>,
  principal: Principal,
  inboxId: string,
): Promise<InboxRow> {
  const row = ID_PATTERNS.inbox.test(inboxId)
    ? await s.store.inboxes.findActiveInbox(principal.organizationId, inboxId)
    : undefined
  if (!row) throw new DomainError('inbox_not_found', 'No inbox with this id.')
  return row
}
