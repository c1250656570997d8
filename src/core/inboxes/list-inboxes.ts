import type { Principal } from '../api-keys/authenticate.ts'
import { cutPage } from '../common/keyset.ts'
import type { Inbox } from '../common/models.ts'
import type { Services } from '../common/services.ts'
import { presentInbox } from './present.ts'

interface ListInboxesInput {
  limit: number
  cursor?: string
  /** The console's filter: the address contains it, ignoring case. */
  addressContains?: string
}

/** Active inboxes, newest first, keyset-paged on (created_at, id). */
export async function listInboxes(
  s: Services,
  principal: Principal,
  input: ListInboxesInput,
): Promise<{ data: Inbox[]; next_cursor: string | null }> {
  const listing = `inboxes:${principal.organizationId}`
  const after = input.cursor === undefined ? undefined : s.cursors.decode(listing, input.cursor)
  const rows = await s.store.inboxes.listActiveInboxes({
    organizationId: principal.organizationId,
    after,
    limit: input.limit + 1,
    addressContains: input.addressContains?.toLowerCase() || undefined,
  })
  const page = cutPage(rows, input.limit, (last) => s.cursors.encode(listing, { at: last.createdAt, id: last.id }))
  return { data: page.rows.map(presentInbox), next_cursor: page.nextCursor }
}
