/**
 * Message count and last arrival of a page of inboxes (the console's inbox list). One
 * grouped read for the listed inboxes only (at most one page of them), skipping messages
 * past their expiry like every read of the API.
 */
import { isoTime } from '../../clock.ts'
import type { Services } from '../common/services.ts'

export interface InboxStats {
  messages: number
  unread: number
  lastReceivedAt: string | null
}

export async function inboxStats(s: Services, inboxIds: string[]): Promise<Map<string, InboxStats>> {
  const stats = new Map<string, InboxStats>(
    inboxIds.map((id) => [id, { messages: 0, unread: 0, lastReceivedAt: null }]),
  )
  if (inboxIds.length === 0) return stats
  const rows = await s.store.inboxes.inboxStats({ inboxIds, now: isoTime(s.clock.now()) })
  for (const row of rows)
    stats.set(row.inboxId, {
      messages: Number(row.messages),
      unread: Number(row.unread),
      lastReceivedAt: row.lastReceivedAt,
    })
  return stats
}
