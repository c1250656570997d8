import { and, desc, eq, lt, or } from 'drizzle-orm'
import { inboxes } from '../../storage/schema.ts'
import type { Principal } from '../api-keys.ts'
import type { Inbox } from '../models.ts'
import type { Services } from '../services.ts'
import { presentInbox } from './present.ts'

export interface ListInboxesInput {
  limit: number
  cursor?: string
}

/** Active inboxes, newest first, keyset-paged on (created_at, id) so pages never overlap or skip. */
export function listInboxes(s: Services, principal: Principal, input: ListInboxesInput): { data: Inbox[]; next_cursor: string | null } {
  const listing = `inboxes:${principal.organizationId}`
  const after = input.cursor === undefined ? undefined : s.cursors.decode(listing, input.cursor)
  const rows = s.storage.db
    .select()
    .from(inboxes)
    .where(
      and(
        eq(inboxes.organizationId, principal.organizationId),
        eq(inboxes.state, 'active'),
        after ? or(lt(inboxes.createdAt, after.at), and(eq(inboxes.createdAt, after.at), lt(inboxes.id, after.id))) : undefined,
      ),
    )
    .orderBy(desc(inboxes.createdAt), desc(inboxes.id))
    .limit(input.limit + 1)
    .all()
  const page = rows.slice(0, input.limit)
  const last = page.at(-1)
  const next_cursor = rows.length > input.limit && last ? s.cursors.encode(listing, { at: last.createdAt, id: last.id }) : null
  return { data: page.map(presentInbox), next_cursor }
}
