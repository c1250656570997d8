/**
 * The sign-in throttle as a unit: the account+address count, the address count, the slowed
 * (never locked) account, a new password forgiving old counts, windows, and its memory bound.
 */
import { expect, setDefaultTimeout, test } from 'bun:test'
import { ManualClock } from '../../src/clock.ts'
import {
  ACCOUNT_CHECK_SPACING_MS,
  ACCOUNT_SLOW_AFTER,
  credentialOf,
  FAILURES_PER_ACCOUNT_AND_ADDRESS,
  MAX_ACCOUNT_WAIT_MS,
  MAX_ENTRIES,
  SIGN_IN_WINDOW_MS,
  SignInThrottle,
  waitInWords,
} from '../../src/core/users/sign-in-throttle.ts'

// A hang's deadline, not a speed: on a busy machine this file's servers, processes or
// generated cases take well over Bun's default of 5 s.
setDefaultTimeout(30_000)

const failed = (throttle: SignInThrottle, email: string, address: string, credential = 'hash-1') => {
  const wait = throttle.begin(email, address, credential)
  throttle.finish(email, address, 'failed')
  return wait
}

test("an account's failures refuse only the address they came from, until the window ends, with the wait in words", () => {
  const clock = new ManualClock()
  const throttle = new SignInThrottle(clock)
  for (let i = 0; i < FAILURES_PER_ACCOUNT_AND_ADDRESS; i++) failed(throttle, 'a@example.com', '10.0.0.1')
  expect(() => throttle.begin('a@example.com', '10.0.0.1', 'hash-1')).toThrow(
    'Too many wrong passwords for this account from your address. Try again in 15 minutes.',
  )
  // The owner, from their own address, is not locked out by someone else's guesses.
  expect(throttle.begin('a@example.com', '10.9.9.9', 'hash-1')).toBe(0)
  throttle.finish('a@example.com', '10.9.9.9', 'succeeded')
  clock.advance(SIGN_IN_WINDOW_MS - 30_000)
  expect(() => throttle.check('a@example.com', '10.0.0.1', 'hash-1')).toThrow('Try again in 30 seconds.')
  clock.advance(30_000)
  expect(() => throttle.check('a@example.com', '10.0.0.1', 'hash-1')).not.toThrow()
})

test(`past ${ACCOUNT_SLOW_AFTER} failures from anywhere the account is slowed, not locked: checks are spaced, the wait is bounded`, () => {
  const clock = new ManualClock()
  const throttle = new SignInThrottle(clock)
  for (let i = 0; i < ACCOUNT_SLOW_AFTER; i++) expect(failed(throttle, 'b@example.com', `10.1.0.${i}`)).toBe(0)
  // Attempts arriving together each get the next free turn.
  const waits: number[] = []
  for (let i = 0; i * ACCOUNT_CHECK_SPACING_MS <= MAX_ACCOUNT_WAIT_MS; i++)
    waits.push(throttle.begin('b@example.com', `10.2.0.${i}`, 'hash-1'))
  expect(waits).toEqual(waits.map((_, i) => i * ACCOUNT_CHECK_SPACING_MS))
  // Beyond the longest wait the attempt is refused for just the seconds until a turn is near.
  expect(() => throttle.begin('b@example.com', '10.3.0.1', 'hash-1')).toThrow(
    /spaced out\. Try again in \d+ seconds?\./,
  )
  // Once the queue has drained, the right password from anywhere gets in after at most one spacing.
  clock.advance(waits.at(-1)! + ACCOUNT_CHECK_SPACING_MS)
  expect(throttle.begin('b@example.com', '10.4.0.1', 'hash-1')).toBeLessThanOrEqual(ACCOUNT_CHECK_SPACING_MS)
  throttle.finish('b@example.com', '10.4.0.1', 'succeeded')
  expect(throttle.begin('b@example.com', '10.4.0.2', 'hash-1')).toBe(0)
})

test("a new password (the operator's reset, from the console or the CLI) forgives the account's counts; the address keeps its own", () => {
  const throttle = new SignInThrottle(new ManualClock())
  for (let i = 0; i < ACCOUNT_SLOW_AFTER + 5; i++)
    failed(throttle, 'c@example.com', i < FAILURES_PER_ACCOUNT_AND_ADDRESS ? '10.5.0.1' : `10.5.1.${i}`)
  expect(() => throttle.check('c@example.com', '10.5.0.1', 'hash-1')).toThrow('Too many wrong passwords')
  expect(throttle.begin('c@example.com', '10.5.2.1', 'hash-1')).toBeGreaterThan(0)
  // The stored hash changed: neither the pair nor the account count applies any more.
  expect(() => throttle.check('c@example.com', '10.5.0.1', 'hash-2')).not.toThrow()
  expect(throttle.begin('c@example.com', '10.5.2.2', 'hash-2')).toBe(0)
  expect(credentialOf('$argon2id$v=19$m=65536,t=2,p=1$salt$0123456789abcdefDIGEST')).toBe(
    '456789abcdefDIGEST'.slice(-16),
  )
  expect(credentialOf(undefined)).toBe('')
})

test('an attempt that never reached its password check takes all its counts back', () => {
  const throttle = new SignInThrottle(new ManualClock())
  for (let i = 0; i < 3 * FAILURES_PER_ACCOUNT_AND_ADDRESS; i++) {
    throttle.begin('d@example.com', '10.6.0.1', 'hash-1')
    throttle.finish('d@example.com', '10.6.0.1', 'not_checked')
  }
  expect(() => throttle.check('d@example.com', '10.6.0.1', 'hash-1')).not.toThrow()
})

test('waits are said in seconds, then in whole minutes', () => {
  expect([waitInWords(1), waitInWords(45), waitInWords(89), waitInWords(90), waitInWords(900)]).toEqual([
    '1 second',
    '45 seconds',
    '89 seconds',
    '2 minutes',
    '15 minutes',
  ])
})

test('a spray of made-up accounts from many addresses keeps at most MAX_ENTRIES counts', () => {
  const throttle = new SignInThrottle(new ManualClock())
  // Each failure makes three counts (account, account+address, address): half the cap in calls is 1.5 times it in counts.
  for (let i = 0; i < MAX_ENTRIES / 2; i++)
    throttle.recordFailure(`user${i}@example.com`, `2001:db8::${i.toString(16)}`)
  expect((throttle as unknown as { failures: Map<string, unknown> }).failures.size).toBeLessThanOrEqual(MAX_ENTRIES + 2)
})
