/** The sign-in throttle as a unit: windows, the per-account and per-address counts, and its memory bound. */
import { expect, setDefaultTimeout, test } from 'bun:test'
import { ManualClock } from '../../src/clock.ts'
import { FAILURES_PER_ACCOUNT, MAX_ENTRIES, SIGN_IN_WINDOW_MS, SignInThrottle } from '../../src/core/console/sign-in-throttle.ts'

// A hang's deadline, not a speed: on a busy machine this file's servers, processes or
// generated cases take well over Bun's default of 5 s.
setDefaultTimeout(30_000)

test('an account is refused after its failures until the window ends; a success forgives the account only', () => {
  const clock = new ManualClock()
  const throttle = new SignInThrottle(clock)
  for (let i = 0; i < FAILURES_PER_ACCOUNT; i++) throttle.recordFailure('a@example.com', `10.0.0.${i}`)
  expect(() => throttle.check('a@example.com', '10.9.9.9')).toThrow('Too many failed sign-ins')
  clock.advance(SIGN_IN_WINDOW_MS)
  expect(() => throttle.check('a@example.com', '10.9.9.9')).not.toThrow()
})

test('a spray of made-up accounts from many addresses keeps at most MAX_ENTRIES counts', () => {
  const throttle = new SignInThrottle(new ManualClock())
  for (let i = 0; i < MAX_ENTRIES; i++) throttle.recordFailure(`user${i}@example.com`, `2001:db8::${i.toString(16)}`)
  expect((throttle as unknown as { failures: Map<string, unknown> }).failures.size).toBeLessThanOrEqual(MAX_ENTRIES + 2)
})
