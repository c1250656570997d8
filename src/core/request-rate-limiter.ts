/**
 * HTTP rate limits by UTC minute: the organisation's requests per key and per organisation
 * (LIMIT_REQUESTS_PER_KEY and LIMIT_REQUESTS_PER_ORG unless the operator set its own).
 * Counts live in memory: one process serves the API, and a restart forgiving the current
 * minute is harmless.
 */
import type { Clock } from '../clock.ts'
import type { Principal } from './api-keys/authenticate.ts'
import { DomainError } from './errors.ts'

const MINUTE = 60_000

export class RequestRateLimiter {
  private minute = -1
  private counts = new Map<string, number>()

  constructor(private readonly clock: Clock) {}

  /** Counts one request, or throws 429 with Retry-After set to the start of the next UTC minute. */
  admit(principal: Principal): void {
    const limits = principal.limits
    const now = this.clock.now()
    const minute = Math.floor(now / MINUTE)
    if (minute !== this.minute) {
      this.minute = minute
      this.counts.clear()
    }
    const keySlot = `key:${principal.keyPublicId}`
    const orgSlot = `org:${principal.organizationId}`
    const keyCount = this.counts.get(keySlot) ?? 0
    const orgCount = this.counts.get(orgSlot) ?? 0
    if (keyCount >= limits.requestsPerKey || orgCount >= limits.requestsPerOrg) {
      const retryAfter = Math.max(1, Math.ceil(((minute + 1) * MINUTE - now) / 1000))
      const which = keyCount >= limits.requestsPerKey ? `${limits.requestsPerKey} requests per minute for this key` : `${limits.requestsPerOrg} requests per minute for this organization`
      throw new DomainError('rate_limit_exceeded', `Rate limit of ${which} exceeded; retry at the next UTC minute.`, { retryAfterSeconds: retryAfter })
    }
    this.counts.set(keySlot, keyCount + 1)
    this.counts.set(orgSlot, orgCount + 1)
  }
}
