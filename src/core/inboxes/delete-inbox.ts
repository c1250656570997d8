import { eq } from 'drizzle-orm'
import { inboxes } from '../../storage/schema.ts'
import type { Principal } from '../api-keys/authenticate.ts'
import { routingFailure } from '../routing.ts'
import type { Services } from '../services.ts'
import { transaction } from '../transaction.ts'
import { findActiveInbox } from './find-inbox.ts'
import { releaseAbandonedClaims } from './idempotency.ts'

/**
 * deleteInbox: the routing rule goes first; if the provider fails the inbox stays and keeps
 * working. Its messages, sources and attachments go with it (foreign-key cascade).
 * Monthly email usage is kept: it counts what arrived, not what is left.
 */
export async function deleteInbox(s: Services, principal: Principal, inboxId: string): Promise<void> {
  const inbox = findActiveInbox(s, principal, inboxId)
  try {
    await s.routing.deleteRule(inbox.routingRuleId, inbox.address)
  } catch (error) {
    throw routingFailure(error, 'delete')
  }
  s.disk.freeing(() => transaction(s, (tx) => tx.delete(inboxes).where(eq(inboxes.id, inbox.id)).run()))
  s.notifier.emit(inbox.id, 'inbox_deleted')
}

/**
 * At boot no request is running, so rows still 'creating' belong to a process that died
 * between reserving the address and activating it; they are dropped (and logged, since
 * the provider may hold a rule for them). Their idempotency claims are released with them,
 * so the client's retry runs anew instead of meeting idempotency_in_progress.
 */
export function discardUnfinishedInboxes(s: Services): void {
  const stale = transaction(s, (tx) => tx.delete(inboxes).where(eq(inboxes.state, 'creating')).returning().all())
  for (const row of stale) s.logger.warn('unfinished_inbox_discarded', { inbox_id: row.id, address: row.address, routing_rule_id: row.routingRuleId })
  const released = releaseAbandonedClaims(s)
  if (released > 0) s.logger.warn('abandoned_idempotency_claims_released', { count: released })
}
