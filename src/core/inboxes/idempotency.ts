/**
 * createInbox idempotency (spec createInbox rules 1-4, 7). A record is claimed
 * 'in_progress' before any work, completed with the 201 body in the same transaction that
 * makes the inbox active, and deleted if the request fails, so a failure is never replayed
 * and never blocks a retry. Records left 'in_progress' by a crash are released at boot
 * (discardUnfinishedInboxes).
 */
import { createHash } from 'node:crypto'
import { isoTime } from '../../clock.ts'
import type { IdempotencyClaim } from '../../storage/port/inboxes.ts'
import { DomainError } from '../common/errors.ts'
import type { Services } from '../common/services.ts'

export type { IdempotencyClaim }

export function checkIdempotencyKey(key: string | null): string | null {
  if (key === null) return null
  if (key.length < 8 || key.length > 200) {
    throw new DomainError('invalid_idempotency_key', 'Idempotency-Key must be 8 to 200 characters long.')
  }
  return key
}

export const fingerprint = (normalizedBody: unknown): string =>
  createHash('sha256').update(JSON.stringify(normalizedBody)).digest('hex')

/**
 * Claims the key, or returns the cached body of an earlier success. Throws
 * idempotency_key_reused / idempotency_in_progress / idempotency_unavailable.
 */
export async function claimIdempotencyKey(
  s: Services,
  organizationId: string,
  key: string,
  requestFingerprint: string,
): Promise<{ cached: unknown } | { claim: IdempotencyClaim }> {
  const now = s.clock.now()
  const outcome = await s.store.inboxes.claimIdempotencyKey({
    organizationId,
    key,
    fingerprint: requestFingerprint,
    now: isoTime(now),
    expiresAt: isoTime(now + s.config.limits.idempotencyHours * 3_600_000),
  })
  switch (outcome.outcome) {
    case 'reused':
      throw new DomainError('idempotency_key_reused', 'This Idempotency-Key was used with a different request body.')
    case 'in_progress':
      throw new DomainError(
        'idempotency_in_progress',
        'A request with this Idempotency-Key is still running; retry in a second.',
        { retryAfterSeconds: 1 },
      )
    case 'cached':
      return { cached: readCached(outcome.responseBody) }
    case 'claimed':
      return { claim: outcome.claim }
  }
}

function readCached(body: string | null): unknown {
  try {
    if (body === null) throw new Error('no body')
    return JSON.parse(body)
  } catch {
    throw new DomainError(
      'idempotency_unavailable',
      'The stored result of this Idempotency-Key could not be read; retry the same request.',
    )
  }
}

/** Forgets a claim whose request failed, so the same key can be retried at once. */
export async function releaseIdempotencyClaim(s: Services, claim: IdempotencyClaim): Promise<void> {
  await s.store.inboxes.releaseIdempotencyClaim(claim)
}

/** Sweeper step: deletes up to `batch` expired records; returns how many. */
export async function sweepExpiredIdempotencyRecords(s: Services, batch: number): Promise<number> {
  return s.store.inboxes.sweepExpiredIdempotencyRecords({ now: isoTime(s.clock.now()), batch })
}
