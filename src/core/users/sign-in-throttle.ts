/**
 * Password-guess throttling, for sign-in and for the current password of a password change.
 * SignInThrottle counts in memory (SQLite mode: one process serves the console, and a restart
 * forgiving a window is harmless next to argon2id's cost per guess); SharedSignInThrottle
 * (PostgreSQL mode) keeps the same counts in the database, so a guesser spreading attempts
 * over machines meets the same limits as on one. Both follow the same rules and refuse with
 * the same words.
 *
 * The rules are chosen so that an attacker cannot aim a lockout at somebody else:
 * - **account + address**: FAILURES_PER_ACCOUNT_AND_ADDRESS failures in a window refuse that
 *   account from that address only (429 until the window ends). Guessing someone's password
 *   from your machine locks out your machine, not them.
 * - **address**: FAILURES_PER_ADDRESS failures refuse every account from it (a spray).
 * - **account, from anywhere**: past ACCOUNT_SLOW_AFTER failures the account is slowed, not
 *   locked: its password checks are spaced ACCOUNT_CHECK_SPACING_MS apart, and an attempt
 *   waits for its turn (up to MAX_ACCOUNT_WAIT_MS, else 429 with the seconds to wait). Many
 *   addresses guessing together get one guess per spacing; the owner, with the right
 *   password, waits a few seconds and is in.
 * A new password (the operator's reset, from the console or the CLI, or the user's own
 * change) forgives the account's counts: each count remembers the credential it was made
 * against, and a count against an older password is dropped when next read.
 */
import type { Clock } from '../../clock.ts'
import { BoundedKeyMap } from '../common/bounded-key-map.ts'
import { Refusal } from '../common/refusals.ts'

export const SIGN_IN_WINDOW_MS = 15 * 60_000
export const FAILURES_PER_ACCOUNT_AND_ADDRESS = 5
export const FAILURES_PER_ADDRESS = 20
export const ACCOUNT_SLOW_AFTER = 10
export const ACCOUNT_CHECK_SPACING_MS = 2_000
export const MAX_ACCOUNT_WAIT_MS = 10_000
export const MAX_ENTRIES = 100_000

interface Entry {
  count: number
  windowEndsAt: number
  /** Which password the failures were made against ('' for the address's own count). */
  credential: string
  /** The account's next free check, while it is slowed. */
  nextCheckAt?: number
}

/** How an attempt `begin` admitted ended: a password check that matched or not, or none at all. */
export type AttemptOutcome = 'succeeded' | 'failed' | 'not_checked'

/**
 * A short, stable mark of the user's current password hash (its last characters are the
 * salted digest), or '' for an unknown account. Counts made under another mark are stale.
 */
export const credentialOf = (passwordHash: string | undefined): string => passwordHash?.slice(-16) ?? ''

/** "12 minutes" / "40 seconds": the wait, said the way the page says it. */
export function waitInWords(seconds: number): string {
  if (seconds < 90) return `${Math.max(1, seconds)} second${seconds === 1 ? '' : 's'}`
  const minutes = Math.ceil(seconds / 60)
  return `${minutes} minutes`
}

/** What a password check goes through, whichever mode counts it. */
export interface GuessThrottle {
  /** Admits and counts one password check (throws `throttled`), answering the wait for its turn in ms. */
  begin(email: string, clientAddress: string, credential?: string): number | Promise<number>
  /** Ends an attempt `begin` admitted: a success or an attempt never checked takes its counts back. */
  finish(email: string, clientAddress: string, outcome: AttemptOutcome): void | Promise<void>
}

const REASONS = {
  pair: 'Too many wrong passwords for this account from your address.',
  address: 'Too many wrong passwords from your address.',
  account: 'This account has had many wrong passwords, so its sign-ins are spaced out.',
} as const

const refused = (reason: string, retryAfterSeconds: number) =>
  new Refusal('throttled', `${reason} Try again in ${waitInWords(retryAfterSeconds)}.`, retryAfterSeconds)

export class SignInThrottle implements GuessThrottle {
  // Keys hold client input (email, address): long ones are kept hashed (bounded-key-map.ts).
  private readonly failures = new BoundedKeyMap<Entry>()

  constructor(private readonly clock: Clock) {}

  /** The live entry of a slot, or undefined when it has none, its window ended, or its password changed. */
  private live(slot: string, credential: string, now: number): Entry | undefined {
    const entry = this.failures.get(slot)
    if (!entry) return undefined
    if (entry.windowEndsAt <= now || entry.credential !== credential) {
      this.failures.delete(slot)
      return undefined
    }
    return entry
  }

  /** Throws `throttled`, with the wait in its message, when this account or address may not try now. */
  check(email: string, clientAddress: string, credential = ''): void {
    const now = this.clock.now()
    const pair = this.live(pairSlot(email, clientAddress), credential, now)
    if (pair && pair.count >= FAILURES_PER_ACCOUNT_AND_ADDRESS) {
      throw refused(REASONS.pair, Math.ceil((pair.windowEndsAt - now) / 1000))
    }
    const address = this.live(addressSlot(clientAddress), '', now)
    if (address && address.count >= FAILURES_PER_ADDRESS) {
      throw refused(REASONS.address, Math.ceil((address.windowEndsAt - now) / 1000))
    }
  }

  /**
   * Admits one password check: refuses when a count is used up, otherwise counts it as a
   * failure at once (so parallel guesses cannot all pass before any is recorded) and returns
   * how many milliseconds it must wait for its turn on a slowed account (0 when not slowed).
   * Call `finish` when the check ends.
   */
  begin(email: string, clientAddress: string, credential = ''): number {
    this.check(email, clientAddress, credential)
    const now = this.clock.now()
    let waitMs = 0
    const account = this.live(accountSlot(email), credential, now)
    if (account && account.count >= ACCOUNT_SLOW_AFTER) {
      const turn = Math.max(now, account.nextCheckAt ?? now)
      waitMs = turn - now
      if (waitMs > MAX_ACCOUNT_WAIT_MS) {
        throw refused(REASONS.account, Math.ceil((waitMs - MAX_ACCOUNT_WAIT_MS) / 1000))
      }
      account.nextCheckAt = turn + ACCOUNT_CHECK_SPACING_MS
    }
    this.recordFailure(email, clientAddress, credential)
    return waitMs
  }

  /** Ends an attempt `begin` admitted: a success or an attempt never checked takes its counts back. */
  finish(email: string, clientAddress: string, outcome: AttemptOutcome): void {
    if (outcome === 'failed') return
    for (const slot of outcome === 'succeeded'
      ? [pairSlot(email, clientAddress), addressSlot(clientAddress)]
      : [accountSlot(email), pairSlot(email, clientAddress), addressSlot(clientAddress)]) {
      const entry = this.failures.get(slot)
      if (entry && entry.count > 0) entry.count--
    }
    // A success forgives the account's failures (not the address's: one address may guess many accounts).
    if (outcome === 'succeeded') this.failures.delete(accountSlot(email))
  }

  recordFailure(email: string, clientAddress: string, credential = ''): void {
    const now = this.clock.now()
    for (const [slot, mark] of [
      [accountSlot(email), credential],
      [pairSlot(email, clientAddress), credential],
      [addressSlot(clientAddress), ''],
    ] as const) {
      const entry = this.live(slot, mark, now)
      if (entry) entry.count++
      else this.failures.set(slot, { count: 1, windowEndsAt: now + SIGN_IN_WINDOW_MS, credential: mark })
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
}

const accountSlot = (email: string) => `account:${email}`
const addressSlot = (clientAddress: string) => `address:${clientAddress}`
const pairSlot = (email: string, clientAddress: string) => `pair:${clientAddress}|${email}`

/** The rules above, for the database's counts. */
export const SIGN_IN_RULES = {
  windowMs: SIGN_IN_WINDOW_MS,
  failuresPerAccountAndAddress: FAILURES_PER_ACCOUNT_AND_ADDRESS,
  failuresPerAddress: FAILURES_PER_ADDRESS,
  accountSlowAfter: ACCOUNT_SLOW_AFTER,
  accountCheckSpacingMs: ACCOUNT_CHECK_SPACING_MS,
  maxAccountWaitMs: MAX_ACCOUNT_WAIT_MS,
}

/** The counts across machines (PostgreSQL mode: createSignInFailures with SIGN_IN_RULES). */
export interface SharedSignInFailures {
  begin(
    email: string,
    clientAddress: string,
    credential?: string,
  ): Promise<
    { admitted: true; waitMs: number } | { admitted: false; refused: keyof typeof REASONS; retryAfterSeconds: number }
  >
  finish(email: string, clientAddress: string, outcome: AttemptOutcome): Promise<void>
}

export class SharedSignInThrottle implements GuessThrottle {
  constructor(
    private readonly failures: SharedSignInFailures,
    /** A give-back that failed leaves the attempt counted as a failure: the safe side. */
    private readonly finishFailed: (error: unknown) => void,
  ) {}

  async begin(email: string, clientAddress: string, credential = ''): Promise<number> {
    const admission = await this.failures.begin(email, clientAddress, credential)
    if (!admission.admitted) throw refused(REASONS[admission.refused], admission.retryAfterSeconds)
    return admission.waitMs
  }

  async finish(email: string, clientAddress: string, outcome: AttemptOutcome): Promise<void> {
    await this.failures.finish(email, clientAddress, outcome).catch(this.finishFailed)
  }
}
