/**
 * createInbox idempotency across machines: the PostgreSQL counterpart of
 * core/inboxes/idempotency.ts's claim. In SQLite mode an `in_progress` record always belongs
 * to a running request of the one process (records left by a crash are released at boot).
 * With several machines a boot cannot tell a dead request from another machine's live one,
 * so each `in_progress` record has a lease (`idempotency_leases`) that its machine's
 * heartbeat renews. A second machine that finds a live lease answers as the spec says for a
 * concurrent duplicate (409 `idempotency_in_progress`, `Retry-After: 1`); once the lease of
 * a dead holder has run out, the next request with that key takes it over and runs.
 *
 * Every step on one key (claim, complete, release) runs under the key's transaction-scoped
 * advisory lock, so a takeover and a late completion by the old holder are ordered: either
 * the completion commits first and the takeover finds the cached result, or the takeover
 * wins and the completion fails (its storing transaction rolls back, so no inbox is created
 * twice). This module answers outcomes; core maps them to the spec's errors.
 */
import { randomBytes } from 'node:crypto'
import type { Clock } from '../../clock.ts'
import type { Queryable, Sql } from './client.ts'
import { leaseHeartbeat } from './lease-heartbeat.ts'

export interface IdempotencyClaim {
  organizationId: string
  key: string
  /** Random per claim: only the holder of this claim can complete or release it. */
  claimId: string
}

export type ClaimOutcome =
  | { outcome: 'claimed'; claim: IdempotencyClaim }
  /** A completed request with the same body: replay this stored 201 body (null or unreadable → idempotency_unavailable). */
  | { outcome: 'cached'; responseBody: string | null }
  /** The key was used with a different body: idempotency_key_reused. */
  | { outcome: 'reused' }
  /** Another request with this key is running on a live machine: idempotency_in_progress. */
  | { outcome: 'in_progress'; retryAfterSeconds: number }

/** The claim was taken over after its lease ran out; the storing transaction must roll back. */
export class IdempotencyClaimLost extends Error {
  constructor(readonly claim: IdempotencyClaim) {
    super(`the claim on Idempotency-Key ${claim.key} was taken over after its lease ran out`)
  }
}

export interface IdempotencyClaims {
  claim(organizationId: string, key: string, requestFingerprint: string): Promise<ClaimOutcome>
  /** Inside createInbox's storing transaction: records the 201 body; throws IdempotencyClaimLost. */
  complete(tx: Queryable, claim: IdempotencyClaim, responseBody: unknown): Promise<void>
  /** Forgets a failed request's claim so the key can be retried at once; harmless if already gone. */
  release(claim: IdempotencyClaim): Promise<void>
  /** Extends every lease this machine holds; the timer of `start()` calls it. */
  renew(): Promise<void>
  start(): void
  stop(): void
}

export interface IdempotencyClaimOptions {
  /** This machine's name in the table, unique per running process. */
  holder: string
  clock: Clock
  /** How long a completed record is kept (the spec's 24 hours; core passes its configuration). */
  retentionMs: number
  /** How long a dead machine's request still blocks its key; 30 s by default, renewed every third. */
  leaseMs?: number
}

const lockKey = (tx: Queryable, organizationId: string, key: string) => tx`select pg_advisory_xact_lock(hashtextextended(${`pigeonhole.idempotency.${organizationId}\n${key}`}, 0))`

interface Existing {
  request_fingerprint: string
  state: 'in_progress' | 'completed'
  response_body: string | null
  retained: boolean
  lease_live: boolean | null
}

export function createIdempotencyClaims(sql: Sql, options: IdempotencyClaimOptions): IdempotencyClaims {
  const { holder, clock, retentionMs } = options
  const leaseMs = options.leaseMs ?? 30_000

  const renew = async () => {
    const expiresAt = new Date(clock.now() + leaseMs).toISOString()
    await sql`update idempotency_leases set expires_at = ${expiresAt} where holder = ${holder}`
  }
  const heartbeat = leaseHeartbeat(leaseMs, renew)

  return {
    claim(organizationId, key, requestFingerprint) {
      const nowMs = clock.now()
      const now = new Date(nowMs).toISOString()
      return sql.begin(async (tx): Promise<ClaimOutcome> => {
        await lockKey(tx, organizationId, key)
        const [existing] = await tx<Existing[]>`
          select r.request_fingerprint, r.state, r.response_body, r.expires_at > ${now} as retained, l.expires_at > ${now} as lease_live
          from idempotency_records r
          left join idempotency_leases l on l.organization_id = r.organization_id and l.idempotency_key = r.idempotency_key
          where r.organization_id = ${organizationId} and r.idempotency_key = ${key}`
        if (existing?.retained) {
          if (existing.request_fingerprint !== requestFingerprint) return { outcome: 'reused' }
          if (existing.state === 'completed') return { outcome: 'cached', responseBody: existing.response_body }
          if (existing.lease_live) return { outcome: 'in_progress', retryAfterSeconds: 1 }
          // In progress, but its machine stopped renewing: that request is dead; take the key over.
        }
        await tx`delete from idempotency_leases where organization_id = ${organizationId} and idempotency_key = ${key}`
        await tx`delete from idempotency_records where organization_id = ${organizationId} and idempotency_key = ${key}`
        const claim: IdempotencyClaim = { organizationId, key, claimId: `idem_${randomBytes(16).toString('hex')}` }
        await tx`
          insert into idempotency_records (organization_id, idempotency_key, request_fingerprint, state, created_at, expires_at)
          values (${organizationId}, ${key}, ${requestFingerprint}, 'in_progress', ${now}, ${new Date(nowMs + retentionMs).toISOString()})`
        await tx`
          insert into idempotency_leases (organization_id, idempotency_key, claim_id, holder, expires_at)
          values (${organizationId}, ${key}, ${claim.claimId}, ${holder}, ${new Date(nowMs + leaseMs).toISOString()})`
        return { outcome: 'claimed', claim }
      })
    },

    async complete(tx, claim, responseBody) {
      await lockKey(tx, claim.organizationId, claim.key)
      const ours = await tx`
        delete from idempotency_leases
        where organization_id = ${claim.organizationId} and idempotency_key = ${claim.key} and claim_id = ${claim.claimId}
        returning 1`
      if (ours.length === 0) throw new IdempotencyClaimLost(claim)
      await tx`
        update idempotency_records set state = 'completed', response_body = ${JSON.stringify(responseBody)}
        where organization_id = ${claim.organizationId} and idempotency_key = ${claim.key}`
    },

    async release(claim) {
      await sql.begin(async (tx) => {
        await lockKey(tx, claim.organizationId, claim.key)
        const ours = await tx`
          delete from idempotency_leases
          where organization_id = ${claim.organizationId} and idempotency_key = ${claim.key} and claim_id = ${claim.claimId}
          returning 1`
        // Only our own record: after a takeover the row belongs to the request that took it.
        if (ours.length > 0) await tx`delete from idempotency_records where organization_id = ${claim.organizationId} and idempotency_key = ${claim.key} and state = 'in_progress'`
      })
    },

    renew,
    start: heartbeat.start,
    stop: heartbeat.stop,
  }
}
