import type { inboxes } from '../../storage/schema.ts'
import type { Inbox } from '../models.ts'

export const presentInbox = (row: typeof inboxes.$inferSelect): Inbox => ({
  id: row.id,
  address: row.address,
  local_part: row.localPart,
  status: 'active',
  created_at: row.createdAt,
})
