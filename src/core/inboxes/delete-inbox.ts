import { isoTime } from '../../clock.ts'
import type { Principal } from '../api-keys/authenticate.ts'
import { routingFailure } from '../common/routing.ts'
import type { Services } from '../common/services.ts'
import { findActiveInbox } from './find-inbox.ts'

/**
 * deleteInbox: the routing rule goes first; if the provider fails the inbox stays and keeps
 * working. Its messages, sources and attachments go with it (foreign-key cascade).
 * Monthly email usage is kept: it counts what arrived, not what is left.
 */
export async function deleteInbox(s: Services, principal: Principal, inboxId: string): Promise<void> {
  const inbox = await findActiveInbox(s, principal, inboxId)
  try {
    await s.routing.deleteRule(inbox.routingRuleId, inbox.address)
  } catch (error) {
    throw routingFailure(error, 'delete')
  }
  await s.disk.freeing(() => s.store.inboxes.deleteInbox(inbox.id))
  s.notifier.emit(inbox.id, 'inbox_deleted')
}

/**
 * How long a 'creating' row of another machine (PostgreSQL mode) may still belong to a running
 * createInbox: the routing call it waits on is bounded well below this, so a row older than
 * this at boot was left by a machine that died between reserving and activating.
 */
const UNFINISHED_AFTER_MS = 10 * 60_000

/**
 * At boot, rows still 'creating' that no running request can own belong to a process that
 * died between reserving the address and activating it; they are dropped (and logged, since
 * the provider may hold a rule for them). Abandoned idempotency claims are released with them,
 * so the client's retry runs anew instead of meeting idempotency_in_progress. With SQLite one
 * process serves the API, so at its boot every such row and claim is abandoned.
 */
export async function discardUnfinishedInboxes(s: Services): Promise<void> {
  const { inboxes: stale, releasedClaims } = await s.store.inboxes.discardUnfinished({
    staleBefore: isoTime(s.clock.now() - UNFINISHED_AFTER_MS),
  })
  for (const row of stale)
    s.logger.warn('unfinished_inbox_discarded', {
      inbox_id: row.id,
      address: row.address,
      routing_rule_id: row.routingRuleId,
    })
  if (releasedClaims > 0) s.logger.warn('abandoned_idempotency_claims_released', { count: releasedClaims })
}
