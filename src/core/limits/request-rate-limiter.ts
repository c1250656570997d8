/**
 * HTTP rate limits by UTC minute: the organisation's requests per key and per organisation
 * (LIMIT_REQUESTS_PER_KEY and LIMIT_REQUESTS_PER_ORG unless the operator set its own).
 * Two counters implement the same rules: in memory for one process (the SQLite mode: one
 * process serves the API, and a restart forgiving the current minute is harmless), and
 * shared through the database for several machines (PostgreSQL mode: the 121st request is
 * refused whichever machines the 120 went to).
 */
import type { Clock } from '../../clock.ts'
import type { Principal } from '../api-keys/authenticate.ts'
import { DomainError } from '../common/errors.ts'

const MINUTE = 60_000

/** Counts one request, or throws 429 with Retry-After set to the start of the next UTC minute. */
export interface RequestAdmission {
  admit(principal: Principal): void | Promise<void>
}

const keySubject = (principal: Principal) => `key:${principal.keyPublicId}`
const orgSubject = (principal: Principal) => `org:${principal.organizationId}`

function rateLimitExceeded(principal: Principal, keyFull: boolean, retryAfterSeconds: number): DomainError {
  const { limits } = principal
  const which = keyFull
    ? `${limits.requestsPerKey} requests per minute for this key`
    : `${limits.requestsPerOrg} requests per minute for this organization`
  return new DomainError('rate_limit_exceeded', `Rate limit of ${which} exceeded; retry at the next UTC minute.`, {
    retryAfterSeconds,
  })
}

export class RequestRateLimiter implements RequestAdmission {
  private minute = -1
  private counts = new Map<string, number>()

  constructor(private readonly clock: Clock) {}

  admit(principal: Principal): void {
    const limits = principal.limits
    const now = this.clock.now()
    const minute = Math.floor(now / MINUTE)
    if (minute !== this.minute) {
      this.minute = minute
      this.counts.clear()
    }
    const keySlot = keySubject(principal)
    const orgSlot = orgSubject(principal)
    const keyCount = this.counts.get(keySlot) ?? 0
    const orgCount = this.counts.get(orgSlot) ?? 0
    if (keyCount >= limits.requestsPerKey || orgCount >= limits.requestsPerOrg) {
      const retryAfter = Math.max(1, Math.ceil(((minute + 1) * MINUTE - now) / 1000))
      throw rateLimitExceeded(principal, keyCount >= limits.requestsPerKey, retryAfter)
    }
    this.counts.set(keySlot, keyCount + 1)
    this.counts.set(orgSlot, orgCount + 1)
  }
}

/** A subject with its per-minute limit, as a shared counter takes it. */
interface RateSubject {
  id: string
  limit: number
}

/**
 * Counts a request against every subject for the current UTC minute, all or none (storage's
 * `admitRequest` in PostgreSQL mode); `full` names the subject that refused it.
 */
export type SharedRequestCounter = (
  subjects: RateSubject[],
) => Promise<{ admitted: true } | { admitted: false; full: string; retryAfterSeconds: number }>

/** The same rules over a counter every machine shares. */
export class SharedRequestRateLimiter implements RequestAdmission {
  constructor(private readonly count: SharedRequestCounter) {}

  async admit(principal: Principal): Promise<void> {
    const key = { id: keySubject(principal), limit: principal.limits.requestsPerKey }
    const org = { id: orgSubject(principal), limit: principal.limits.requestsPerOrg }
    const admission = await this.count([key, org])
    if (!admission.admitted) throw rateLimitExceeded(principal, admission.full === key.id, admission.retryAfterSeconds)
  }
}
