import { isoTime } from '../../clock.ts'
import type { Principal } from '../api-keys/authenticate.ts'
import type { Usage } from '../common/models.ts'
import type { Services } from '../common/services.ts'

/** The UTC calendar month containing `ms`: its 'YYYY-MM' key and [start, end) bounds. */
export function utcMonth(ms: number): { key: string; startsAt: number; endsAt: number } {
  const date = new Date(ms)
  const startsAt = Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1)
  const endsAt = Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1)
  return { key: isoTime(startsAt).slice(0, 7), startsAt, endsAt }
}

/**
 * getUsage. `period.ends_at` is the first instant of the next month (exclusive end).
 * `inboxes.active` counts visible inboxes; `emails.received` counts messages stored this
 * month, deleted or not.
 */
export async function getUsage(s: Services, principal: Principal): Promise<Usage> {
  const { limits } = principal
  const month = utcMonth(s.clock.now())
  const { activeInboxes: active, emailsReceived: received } = await s.store.messages.usage({
    organizationId: principal.organizationId,
    month: month.key,
  })
  return {
    plan: 'free',
    period: { starts_at: isoTime(month.startsAt), ends_at: isoTime(month.endsAt) },
    inboxes: { active, limit: limits.activeInboxes, remaining: Math.max(0, limits.activeInboxes - active) },
    emails: { received, limit: limits.monthlyEmails, remaining: Math.max(0, limits.monthlyEmails - received) },
  }
}
