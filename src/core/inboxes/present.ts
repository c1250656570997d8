import type { InboxRow } from '../../storage/rows.ts'
import type { Inbox } from '../common/models.ts'

export const presentInbox = (row: InboxRow): Inbox => ({
  id: row.id,
  address: row.address,
  local_part: row.localPart,
  status: 'active',
  created_at: row.createdAt,
})
