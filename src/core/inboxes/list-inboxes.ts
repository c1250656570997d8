import { and, eq } from 'drizzle-orm'
import { inboxes } from '../../storage/schema.ts'
import type { Principal } from '../api-keys/authenticate.ts'
import { cutPage, newestFirst, olderThan } from '../keyset.ts'
import type { Inbox } from '../models.ts'
import type { Services } from '../services.ts'
import { presentInbox } from './present.ts'

interface ListInboxesInput {
  limit: number
  cursor?: string
}

const keyset = { at: inboxes.createdAt, id: inboxes.id }

/** Active inboxes, newest first, keyset-paged on (created_at, id). */
export function listInboxes(s: Services, principal: Principal, input: ListInboxesInput): { data: Inbox[]; next_cursor: string | null } {
  const listing = `inboxes:${principal.organizationId}`
  const after = input.cursor === undefined ? undefined : s.cursors.decode(listing, input.cursor)
  const rows = s.storage.db
    .select()
    .from(inboxes)
    .where(and(eq(inboxes.organizationId, principal.organizationId), eq(inboxes.state, 'active'), after ? olderThan(keyset, after) : undefined))
    .orderBy(...newestFirst(keyset))
    .limit(input.limit + 1)
    .all()
  const page = cutPage(rows, input.limit, (last) => s.cursors.encode(listing, { at: last.createdAt, id: last.id }))
  return { data: page.rows.map(presentInbox), next_cursor: page.nextCursor }
}
