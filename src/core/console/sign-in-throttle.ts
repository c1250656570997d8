/**
 * Sign-in throttling: failed attempts counted per account and per client address in a
 * fixed window. In memory, like the HTTP rate limiter: one process serves the console,
 * and a restart forgiving a window is harmless next to argon2id's cost per guess.
 */
import type { Clock } from '../../clock.ts'
import { ConsoleError } from './errors.ts'

export const SIGN_IN_WINDOW_MS = 15 * 60_000
export const FAILURES_PER_ACCOUNT = 5
export const FAILURES_PER_ADDRESS = 20
export const MAX_ENTRIES = 100_000

export class SignInThrottle {
  private readonly failures = new Map<string, { count: number; windowEndsAt: number }>()

  constructor(private readonly clock: Clock) {}

  /** Throws `throttled` when the account or the address used up its failures in this window. */
  check(email: string, clientAddress: string): void {
    const now = this.clock.now()
    for (const [slot, limit] of [
      [`account:${email}`, FAILURES_PER_ACCOUNT],
      [`address:${clientAddress}`, FAILURES_PER_ADDRESS],
    ] as const) {
      const entry = this.failures.get(slot)
      if (entry && entry.windowEndsAt <= now) this.failures.delete(slot)
      else if (entry && entry.count >= limit) {
        throw new ConsoleError('throttled', 'Too many failed sign-ins. Try again later.', Math.ceil((entry.windowEndsAt - now) / 1000))
      }
    }
  }

  recordFailure(email: string, clientAddress: string): void {
    const now = this.clock.now()
    for (const slot of [`account:${email}`, `address:${clientAddress}`]) {
      const entry = this.failures.get(slot)
      if (!entry || entry.windowEndsAt <= now) this.failures.set(slot, { count: 1, windowEndsAt: now + SIGN_IN_WINDOW_MS })
      else entry.count++
    }
    // Bound memory under a spray of made-up accounts from many addresses: past the cap, drop
    // finished windows, then the oldest entries down to 90% of it (so the scan is rare);
    // forgetting some stale counts is the price of never growing without bound.
    if (this.failures.size > MAX_ENTRIES) {
      for (const [slot, entry] of this.failures) if (entry.windowEndsAt <= now) this.failures.delete(slot)
      for (const slot of this.failures.keys()) {
        if (this.failures.size <= MAX_ENTRIES * 0.9) break
        this.failures.delete(slot)
      }
    }
  }

  /** A success forgives the account's failures (not the address's: one address may guess many accounts). */
  recordSuccess(email: string): void {
    this.failures.delete(`account:${email}`)
  }
}
