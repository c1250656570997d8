import { and, eq, inArray, sql } from 'drizzle-orm'
import { isoTime } from '../clock.ts'
import { inboxes, monthlyEmailUsage } from '../storage/schema.ts'
import type { Db } from '../storage/database.ts'
import { preparedPerDatabase } from '../storage/prepared.ts'
import type { Principal } from './api-keys/authenticate.ts'
import type { Usage } from './models.ts'
import type { Services } from './services.ts'

/** The UTC calendar month containing `ms`: its 'YYYY-MM' key and [start, end) bounds. */
export function utcMonth(ms: number): { key: string; startsAt: number; endsAt: number } {
  const date = new Date(ms)
  const startsAt = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1)
  const endsAt = Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1)
  return { key: isoTime(startsAt).slice(0, 7), startsAt, endsAt }
}

// Prepared once: RCPT admission reads it for every recipient.
const receivedInMonth = preparedPerDatabase((db) =>
  db
    .select({ received: monthlyEmailUsage.received })
    .from(monthlyEmailUsage)
    .where(and(eq(monthlyEmailUsage.organizationId, sql.placeholder('organizationId')), eq(monthlyEmailUsage.month, sql.placeholder('month'))))
    .prepare(),
)

/** Messages stored for the organisation in the month `monthKey` (committed ones only). */
export function emailsReceived(db: Db, organizationId: string, monthKey: string): number {
  return receivedInMonth(db).get({ organizationId, month: monthKey })?.received ?? 0
}

/**
 * getUsage. `period.ends_at` is the first instant of the next month (exclusive end).
 * `inboxes.active` counts visible inboxes; `emails.received` counts messages stored this
 * month, deleted or not.
 */
export function getUsage(s: Services, principal: Principal): Usage {
  const { limits } = principal
  const month = utcMonth(s.clock.now())
  const active = s.storage.db
    .select({ n: sql<number>`count(*)` })
    .from(inboxes)
    .where(and(eq(inboxes.organizationId, principal.organizationId), inArray(inboxes.state, ['active'])))
    .get()!.n
  const received = emailsReceived(s.storage.db, principal.organizationId, month.key)
  return {
    plan: 'free',
    period: { starts_at: isoTime(month.startsAt), ends_at: isoTime(month.endsAt) },
    inboxes: { active, limit: limits.activeInboxes, remaining: Math.max(0, limits.activeInboxes - active) },
    emails: { received, limit: limits.monthlyEmails, remaining: Math.max(0, limits.monthlyEmails - received) },
  }
}
