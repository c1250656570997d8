/**
 * createInbox idempotency (spec createInbox rules 1-4, 7). A record is claimed
 * 'in_progress' before any work, completed with the 201 body in the same transaction that
 * makes the inbox active, and deleted if the request fails, so a failure is never replayed
 * and never blocks a retry.
 */
import { createHash } from 'node:crypto'
import { and, eq, lte } from 'drizzle-orm'
import { isoTime } from '../../clock.ts'
import type { Tx } from '../../storage/database.ts'
import { idempotencyRecords } from '../../storage/schema.ts'
import { DomainError } from '../errors.ts'
import type { Services } from '../services.ts'
import { transaction } from '../transaction.ts'

export interface IdempotencyClaim {
  organizationId: string
  key: string
}

export function checkIdempotencyKey(key: string | null): string | null {
  if (key === null) return null
  if (key.length < 8 || key.length > 200) {
    throw new DomainError('invalid_idempotency_key', 'Idempotency-Key must be 8 to 200 characters long.')
  }
  return key
}

export const fingerprint = (normalizedBody: unknown): string => createHash('sha256').update(JSON.stringify(normalizedBody)).digest('hex')

/**
 * Claims the key, or returns the cached body of an earlier success. Throws
 * idempotency_key_reused / idempotency_in_progress / idempotency_unavailable.
 */
export function claimIdempotencyKey(s: Services, organizationId: string, key: string, requestFingerprint: string): { cached: unknown } | { claim: IdempotencyClaim } {
  const now = s.clock.now()
  return transaction(s, (tx) => {
    const record = tx
      .select()
      .from(idempotencyRecords)
      .where(and(eq(idempotencyRecords.organizationId, organizationId), eq(idempotencyRecords.idempotencyKey, key)))
      .get()
    // An in-progress record always belongs to a running request: one process serves the API,
    // a failed request deletes its record, and records left by a crash are released at boot.
    const expired = record && Date.parse(record.expiresAt) <= now
    if (record && !expired) {
      if (record.requestFingerprint !== requestFingerprint) {
        throw new DomainError('idempotency_key_reused', 'This Idempotency-Key was used with a different request body.')
      }
      if (record.state === 'in_progress') {
        throw new DomainError('idempotency_in_progress', 'A request with this Idempotency-Key is still running; retry in a second.', { retryAfterSeconds: 1 })
      }
      return { cached: readCached(record.responseBody) }
    }
    if (record) deleteRecord(tx, organizationId, key)
    tx.insert(idempotencyRecords)
      .values({
        organizationId,
        idempotencyKey: key,
        requestFingerprint,
        state: 'in_progress',
        createdAt: isoTime(now),
        expiresAt: isoTime(now + s.config.limits.idempotencyHours * 3_600_000),
      })
      .run()
    return { claim: { organizationId, key } }
  })
}

function readCached(body: string | null): unknown {
  try {
    if (body === null) throw new Error('no body')
    return JSON.parse(body)
  } catch {
    throw new DomainError('idempotency_unavailable', 'The stored result of this Idempotency-Key could not be read; retry the same request.')
  }
}

/** Stores the success; called inside createInbox's transaction, so the inbox and its replay commit together. */
export function completeIdempotencyClaim(s: Pick<Services, 'storage'>, claim: IdempotencyClaim, responseBody: unknown): void {
  transaction(s, (tx) =>
    tx
      .update(idempotencyRecords)
      .set({ state: 'completed', responseBody: JSON.stringify(responseBody) })
      .where(and(eq(idempotencyRecords.organizationId, claim.organizationId), eq(idempotencyRecords.idempotencyKey, claim.key)))
      .run(),
  )
}

/** Forgets a claim whose request failed, so the same key can be retried at once. */
export function releaseIdempotencyClaim(s: Services, claim: IdempotencyClaim): void {
  transaction(s, (tx) => deleteRecord(tx, claim.organizationId, claim.key))
}

function deleteRecord(tx: Tx, organizationId: string, key: string): void {
  tx.delete(idempotencyRecords)
    .where(and(eq(idempotencyRecords.organizationId, organizationId), eq(idempotencyRecords.idempotencyKey, key)))
    .run()
}

/**
 * At boot no request is running, so an 'in_progress' record belongs to a request that died
 * with the previous process. Left alone it would answer idempotency_in_progress for
 * the whole retention period, failing the client's retries; its inbox row is dropped at boot too.
 */
export function releaseAbandonedClaims(s: Services): number {
  return transaction(s, (tx) => tx.delete(idempotencyRecords).where(eq(idempotencyRecords.state, 'in_progress')).returning().all().length)
}

/** Sweeper step: deletes up to `batch` expired records; returns how many. */
export function sweepExpiredIdempotencyRecords(s: Services, batch: number): number {
  const now = isoTime(s.clock.now())
  return transaction(s, (tx) => {
    const rows = tx
      .select({ organizationId: idempotencyRecords.organizationId, key: idempotencyRecords.idempotencyKey })
      .from(idempotencyRecords)
      .where(lte(idempotencyRecords.expiresAt, now))
      .limit(batch)
      .all()
    for (const row of rows) deleteRecord(tx, row.organizationId, row.key)
    return rows.length
  })
}
