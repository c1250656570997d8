/**
 * Sign-in throttling: failed attempts counted per account and per client address in a
 * fixed window. In memory, like the HTTP rate limiter: one process serves the console,
 * and a restart forgiving a window is harmless next to argon2id's cost per guess.
 */
import type { Clock } from '../../clock.ts'
import { BoundedKeyMap } from './bounded-key-map.ts'
import { ConsoleError } from './errors.ts'

export const SIGN_IN_WINDOW_MS = 15 * 60_000
export const FAILURES_PER_ACCOUNT = 5
export const FAILURES_PER_ADDRESS = 20
export const MAX_ENTRIES = 100_000
/** argon2id checks in flight at once; more would only queue CPU work an attacker chose. */
export const MAX_CONCURRENT_VERIFICATIONS = 4

export class SignInThrottle {
  // Keys hold client input (email, address): long ones are kept hashed (bounded-key-map.ts).
  private readonly failures = new BoundedKeyMap<{ count: number; windowEndsAt: number }>()
  private verifying = 0

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

  /**
   * Admits one attempt before its password check: refuses when a count is used up or too
   * many checks are in flight, otherwise counts it as a failure at once, so parallel guesses
   * cannot all pass `check` before any of them is recorded. Call `finish` when the check ends.
   */
  begin(email: string, clientAddress: string): void {
    this.check(email, clientAddress)
    if (this.verifying >= MAX_CONCURRENT_VERIFICATIONS) throw new ConsoleError('throttled', 'Too many sign-ins at once. Try again in a moment.', 1)
    this.verifying++
    this.recordFailure(email, clientAddress)
  }

  /** Ends an attempt `begin` admitted; a success takes back its count (see recordSuccess). */
  finish(email: string, clientAddress: string, succeeded: boolean): void {
    this.verifying--
    if (!succeeded) return
    this.recordSuccess(email)
    const entry = this.failures.get(`address:${clientAddress}`)
    if (entry && entry.count > 0) entry.count--
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
