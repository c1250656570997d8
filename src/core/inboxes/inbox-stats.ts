/**
 * Message count and last arrival of a page of inboxes (the console's inbox list). One
 * grouped read over `messages_by_inbox_newest` for the listed inboxes only (at most one
 * page of them), skipping messages past their expiry like every read of the API.
 */
import { and, count, gt, inArray, max } from 'drizzle-orm'
import { isoTime } from '../../clock.ts'
import { messages } from '../../storage/schema.ts'
import type { Services } from '../services.ts'
import type { Db } from '../../storage/database.ts'

export interface InboxStats {
  messages: number
  lastReceivedAt: string | null
}

/** The grouped read (exported so a test can check its query plan). */
export const inboxStatsQuery = (db: Db, inboxIds: string[], now: number) =>
  db
    .select({ inboxId: messages.inboxId, n: count(), last: max(messages.receivedAt) })
    .from(messages)
    .where(and(inArray(messages.inboxId, inboxIds), gt(messages.expiresAt, isoTime(now))))
    .groupBy(messages.inboxId)

export function inboxStats(s: Services, inboxIds: string[]): Map<string, InboxStats> {
  const stats = new Map<string, InboxStats>(inboxIds.map((id) => [id, { messages: 0, lastReceivedAt: null }]))
  if (inboxIds.length === 0) return stats
  const rows = inboxStatsQuery(s.storage.db, inboxIds, s.clock.now()).all()
  for (const row of rows) stats.set(row.inboxId, { messages: row.n, lastReceivedAt: row.last })
  return stats
}
