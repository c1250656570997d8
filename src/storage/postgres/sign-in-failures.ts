/**
 * The console's sign-in throttle counts across machines: the PostgreSQL counterpart of the
 * in-memory counts of core/users/sign-in-throttle.ts, with the same three slots (the account
 * with the address, the address, the account from anywhere) and the same rules, which the
 * caller passes in (they are core's). A guesser spreading attempts over machines must meet
 * the same limits as on one.
 *
 * `begin` checks and counts an attempt in one transaction holding the advisory locks of its
 * three slots (taken in one order everywhere), so parallel guesses on two machines cannot
 * all pass before any is counted, and a slowed account hands out each check time once.
 * Answers are outcomes; core words the refusal. Times come from the injected clock.
 */
import { createHash } from 'node:crypto'
import type { Clock } from '../../clock.ts'
import type { Queryable, Sql } from './client.ts'

export interface SignInRules {
  windowMs: number
  failuresPerAccountAndAddress: number
  failuresPerAddress: number
  accountSlowAfter: number
  accountCheckSpacingMs: number
  maxAccountWaitMs: number
}

/** Which count refused: the account from this address, the address, or the slowed account. */
type SignInRefusal = { refused: 'pair' | 'address' | 'account'; retryAfterSeconds: number }
type SignInAdmission = { admitted: true; waitMs: number } | ({ admitted: false } & SignInRefusal)
type AttemptOutcome = 'succeeded' | 'failed' | 'not_checked'

export interface SignInFailures {
  /** Whether this account or address may try now (read only), or why not. */
  check(email: string, clientAddress: string, credential?: string): Promise<SignInRefusal | null>
  /** Admits and counts one password check as a failure, with the wait for its turn on a slowed account. */
  begin(email: string, clientAddress: string, credential?: string): Promise<SignInAdmission>
  /** Ends an admitted attempt: a success or an unchecked attempt takes its counts back. */
  finish(email: string, clientAddress: string, outcome: AttemptOutcome): Promise<void>
  recordFailure(email: string, clientAddress: string, credential?: string): Promise<void>
  /** Deletes the rows of ended windows; any machine may run it, at any time. */
  sweep(): Promise<number>
}

interface Row {
  slot: string
  credential: string
  failures: number
  // A Date from a plain pool, a string once Drizzle shares the pool (it reads timestamps as text).
  window_ends_at: Date | string
  next_check_at: Date | string | null
}

const msOf = (at: Date | string): number => new Date(at).getTime()

/** Slots hold client input: a long one is stored as its digest, so a row stays small. */
const stored = (slot: string): string =>
  slot.length <= 200 ? slot : `sha256:${createHash('sha256').update(slot).digest('hex')}`
const slotsOf = (email: string, clientAddress: string) => ({
  account: stored(`account:${email}`),
  pair: stored(`pair:${clientAddress}|${email}`),
  address: stored(`address:${clientAddress}`),
})

export function createSignInFailures(sql: Sql, clock: Clock, rules: SignInRules): SignInFailures {
  /** The live rows of these slots: an ended window or another password's count is none. */
  const liveRows = async (tx: Queryable, marks: Record<string, string>, now: number): Promise<Map<string, Row>> => {
    const rows = await tx<Row[]>`
      select slot, credential, failures, window_ends_at, next_check_at
      from sign_in_failures where slot in ${tx(Object.keys(marks))}`
    return new Map(
      rows.filter((r) => msOf(r.window_ends_at) > now && r.credential === marks[r.slot]).map((r) => [r.slot, r]),
    )
  }

  const refusalOf = (live: Map<string, Row>, slots: ReturnType<typeof slotsOf>, now: number): SignInRefusal | null => {
    const pair = live.get(slots.pair)
    if (pair && pair.failures >= rules.failuresPerAccountAndAddress)
      return { refused: 'pair', retryAfterSeconds: Math.ceil((msOf(pair.window_ends_at) - now) / 1000) }
    const address = live.get(slots.address)
    if (address && address.failures >= rules.failuresPerAddress)
      return { refused: 'address', retryAfterSeconds: Math.ceil((msOf(address.window_ends_at) - now) / 1000) }
    return null
  }

  const lockSlots = async (tx: Queryable, slots: string[]) => {
    for (const slot of [...slots].sort())
      await tx`select pg_advisory_xact_lock(hashtextextended(${`pigeonhole.sign-in.${slot}`}, 0))`
  }

  /** One more failure on each slot: counted in its live window, or starting a new one. */
  const countFailure = async (
    tx: Queryable,
    marks: Record<string, string>,
    live: Map<string, Row>,
    now: number,
    nextCheckAt: Map<string, number>,
  ) => {
    for (const [slot, credential] of Object.entries(marks)) {
      const next = nextCheckAt.get(slot)
      const nextIso = next === undefined ? null : new Date(next).toISOString()
      if (live.has(slot)) {
        await tx`
          update sign_in_failures
          set failures = failures + 1, next_check_at = coalesce(${nextIso}::timestamptz, next_check_at)
          where slot = ${slot}`
      } else {
        const windowEndsAt = new Date(now + rules.windowMs).toISOString()
        await tx`
          insert into sign_in_failures (slot, credential, failures, window_ends_at, next_check_at)
          values (${slot}, ${credential}, 1, ${windowEndsAt}, ${nextIso})
          on conflict (slot) do update
          set credential = excluded.credential, failures = 1,
            window_ends_at = excluded.window_ends_at, next_check_at = excluded.next_check_at`
      }
    }
  }

  const marksOf = (slots: ReturnType<typeof slotsOf>, credential: string) => ({
    [slots.account]: credential,
    [slots.pair]: credential,
    [slots.address]: '',
  })

  return {
    async check(email, clientAddress, credential = '') {
      const now = clock.now()
      const slots = slotsOf(email, clientAddress)
      return refusalOf(await liveRows(sql, marksOf(slots, credential), now), slots, now)
    },

    begin(email, clientAddress, credential = '') {
      const now = clock.now()
      const slots = slotsOf(email, clientAddress)
      const marks = marksOf(slots, credential)
      return sql.begin(async (tx): Promise<SignInAdmission> => {
        await lockSlots(tx, Object.keys(marks))
        const live = await liveRows(tx, marks, now)
        const refusal = refusalOf(live, slots, now)
        if (refusal) return { admitted: false, ...refusal }
        let waitMs = 0
        const nextCheckAt = new Map<string, number>()
        const account = live.get(slots.account)
        if (account && account.failures >= rules.accountSlowAfter) {
          const turn = Math.max(now, account.next_check_at ? msOf(account.next_check_at) : now)
          waitMs = turn - now
          if (waitMs > rules.maxAccountWaitMs)
            return {
              admitted: false,
              refused: 'account',
              retryAfterSeconds: Math.ceil((waitMs - rules.maxAccountWaitMs) / 1000),
            }
          nextCheckAt.set(slots.account, turn + rules.accountCheckSpacingMs)
        }
        await countFailure(tx, marks, live, now, nextCheckAt)
        return { admitted: true, waitMs }
      })
    },

    async finish(email, clientAddress, outcome) {
      if (outcome === 'failed') return
      const slots = slotsOf(email, clientAddress)
      const back = outcome === 'succeeded' ? [slots.pair, slots.address] : [slots.account, slots.pair, slots.address]
      await sql.begin(async (tx) => {
        await lockSlots(tx, Object.values(slots))
        await tx`update sign_in_failures set failures = failures - 1 where slot in ${tx(back)} and failures > 0`
        // A success forgives the account's failures (not the address's: one address may guess many accounts).
        if (outcome === 'succeeded') await tx`delete from sign_in_failures where slot = ${slots.account}`
      })
    },

    async recordFailure(email, clientAddress, credential = '') {
      const now = clock.now()
      const slots = slotsOf(email, clientAddress)
      const marks = marksOf(slots, credential)
      await sql.begin(async (tx) => {
        await lockSlots(tx, Object.keys(marks))
        await countFailure(tx, marks, await liveRows(tx, marks, now), now, new Map())
      })
    },

    async sweep() {
      const deleted =
        await sql`delete from sign_in_failures where window_ends_at <= ${new Date(clock.now()).toISOString()}`
      return deleted.count
    },
  }
}
