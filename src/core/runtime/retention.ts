/**
 * Retention: deletes expired messages (with sources and attachments, by cascade), expired
 * idempotency records, burst buckets no limit reads any more, and expired console sessions. Work is done in small
 * transactions with a yield between them, so ingest never waits long for the write lock.
 */
import { isoTime } from '../../clock.ts'
import { errorFields } from '../../log.ts'
import { endExpiredSessions } from '../sessions/sessions.ts'
import { DomainError } from '../common/errors.ts'
import { sweepExpiredIdempotencyRecords } from '../inboxes/idempotency.ts'
import type { Services } from '../common/services.ts'

const BATCH = 200
const MAX_BATCHES_PER_SWEEP = 50
const BURST_BUCKETS_KEPT_MS = 60 * 60_000

const yieldToIngest = () => new Promise<void>((resolve) => setImmediate(resolve))

async function deleteExpiredMessages(s: Services): Promise<number> {
  const now = isoTime(s.clock.now())
  const { inboxIds } = await s.disk.freeing(() => s.store.inbound.deleteExpiredMessages(now, BATCH))
  for (const inboxId of inboxIds) s.notifier.bump(inboxId)
  return inboxIds.length
}

/** One full sweep; returns counts (tests call it directly with a moved clock). */
export async function sweepOnce(s: Services): Promise<{ messages: number; idempotencyRecords: number }> {
  let messagesDeleted = 0
  let recordsDeleted = 0
  for (let i = 0; i < MAX_BATCHES_PER_SWEEP; i++) {
    const n = await deleteExpiredMessages(s)
    messagesDeleted += n
    if (n < BATCH) break
    await yieldToIngest()
  }
  for (let i = 0; i < MAX_BATCHES_PER_SWEEP; i++) {
    const n = await sweepExpiredIdempotencyRecords(s, BATCH)
    recordsDeleted += n
    if (n < BATCH) break
    await yieldToIngest()
  }
  const oldBuckets = isoTime(s.clock.now() - BURST_BUCKETS_KEPT_MS)
  await s.store.inbound.deleteBurstBucketsBefore(oldBuckets)
  await endExpiredSessions(s)
  return { messages: messagesDeleted, idempotencyRecords: recordsDeleted }
}

/** Runs sweepOnce every `intervalMs`; returns a stop function. */
export function startRetentionSweeper(s: Services, intervalMs = 60_000): () => void {
  return scheduleSweeps(s, () => sweepOnce(s), intervalMs)
}

/**
 * Runs `sweep` every `intervalMs`, one at a time (a turn still running skips the next), for
 * both modes: `sweep` answers its counts, or null when another machine took the turn. A count
 * is logged when something was deleted; a failing or full volume was logged once when it
 * began (storage-health.ts, the guard), so a failed turn simply tries again next time,
 * without a stack every minute. Returns a stop function.
 */
export function scheduleSweeps(
  s: Services,
  sweep: () => Promise<{ messages: number; idempotencyRecords: number } | null>,
  intervalMs: number,
): () => void {
  let running = false
  const timer = setInterval(() => {
    if (running) return
    running = true
    sweep()
      .then((counts) => {
        if (counts && (counts.messages || counts.idempotencyRecords))
          s.logger.info('retention_sweep', {
            deleted_messages: counts.messages,
            deleted_idempotency_records: counts.idempotencyRecords,
          })
      })
      .catch((error: unknown) => {
        const full = error instanceof DomainError && error.code === 'insufficient_storage'
        if (!full && !s.storageHealth.failed(error, 'sweep'))
          s.logger.error('retention_sweep_failed', errorFields(error))
      })
      .finally(() => {
        running = false
      })
  }, intervalMs)
  timer.unref?.()
  return () => clearInterval(timer)
}
