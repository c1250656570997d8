/**
 * Parallel sign-ins over real HTTP: every attempt is counted before its argon2id check, so a
 * wave of guesses sent at once cannot all pass the throttle, and only a few checks run at a
 * time (the password gate, shared with password changes, invite sign-ups, setup and resets).
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { ManualClock } from '../../src/clock.ts'
import { MAX_CONCURRENT_PASSWORD_WORK, MAX_QUEUED_PASSWORD_WORK } from '../../src/core/users/password-gate.ts'
import {
  ACCOUNT_SLOW_AFTER,
  FAILURES_PER_ACCOUNT_AND_ADDRESS,
  FAILURES_PER_ADDRESS,
  SignInThrottle,
} from '../../src/core/users/sign-in-throttle.ts'
import { REAL_PASSWORD_COST, startTestServer, type TestServer } from '../support/harness.ts'
import { ConsoleClient, PASSWORD, setUp } from '../support/console-client.ts'

setDefaultTimeout(60_000)

// One server; each test signs in from its own client address (CLIENT_ADDRESS_HEADER), so the
// address counts one test leaves do not reach the next. Checks at the production cost: the
// waves assert what happens while several checks are in flight, which cheap ones never are.
let server: TestServer
beforeAll(async () => {
  // The test client is the trusted proxy here: only a peer in TRUSTED_PROXIES may set the header.
  server = await startTestServer({
    env: { CLIENT_ADDRESS_HEADER: 'X-Test-Client', TRUSTED_PROXIES: '127.0.0.1, ::1', ...REAL_PASSWORD_COST },
  })
  await setUp(server, { email: 'operator@example.com' })
})
afterAll(() => server.stop())

const fromAddress = (address: string) => ({ headers: { 'x-test-client': address } })
/** Checks the password gate takes at once: those running and those waiting their turn. */
const ADMITTED = MAX_CONCURRENT_PASSWORD_WORK + MAX_QUEUED_PASSWORD_WORK

function counts(statuses: number[]): Record<number, number> {
  const all: Record<number, number> = {}
  for (const status of statuses) all[status] = (all[status] ?? 0) + 1
  return all
}

test('a parallel wave of wrong passwords with the right one last does not sign in, and locks that address out of the account only', async () => {
  const client = ConsoleClient.for(server)
  await client.get('/console/sign-in')
  const wave = 40
  const pages = await Promise.all(
    Array.from({ length: wave }, (_, i) =>
      client.post(
        '/console/sign-in',
        { email: 'operator@example.com', password: i === wave - 1 ? PASSWORD : `wrong guess ${i}`, next: '/console' },
        fromAddress('10.1.0.1'),
      ),
    ),
  )
  const statuses = counts(pages.map((page) => page.status))
  expect(statuses[303]).toBeUndefined()
  expect(statuses[401]).toBeLessThanOrEqual(Math.min(FAILURES_PER_ACCOUNT_AND_ADDRESS, ADMITTED))
  expect((statuses[401] ?? 0) + (statuses[429] ?? 0)).toBe(wave)
  for (const page of pages.filter((candidate) => candidate.status === 429))
    expect(Number(page.headers.get('retry-after'))).toBeGreaterThan(0)
  // Every refused guess was counted: the rest of the allowance, then even the right password is refused from there.
  for (let i = statuses[401] ?? 0; i < FAILURES_PER_ACCOUNT_AND_ADDRESS; i++) {
    expect(
      (
        await client.post(
          '/console/sign-in',
          { email: 'operator@example.com', password: `late guess ${i}`, next: '/console' },
          fromAddress('10.1.0.1'),
        )
      ).status,
    ).toBe(401)
  }
  expect(
    (
      await client.post(
        '/console/sign-in',
        { email: 'operator@example.com', password: PASSWORD, next: '/console' },
        fromAddress('10.1.0.1'),
      )
    ).status,
  ).toBe(429)
  // From the owner's own address the right password still signs in.
  expect(
    (
      await client.post(
        '/console/sign-in',
        { email: 'operator@example.com', password: PASSWORD, next: '/console' },
        fromAddress('10.1.0.2'),
      )
    ).status,
  ).toBe(303)
})

test('the password gate takes a few checks at once (running or waiting their turn); the rest get 429 with Retry-After', async () => {
  const client = ConsoleClient.for(server)
  await client.get('/console/sign-in')
  // Distinct made-up accounts, fewer than the address allows: only the concurrency cap can refuse.
  const wave = Math.min(FAILURES_PER_ADDRESS - 1, ADMITTED * 2)
  const pages = await Promise.all(
    Array.from({ length: wave }, (_, i) =>
      client.post(
        '/console/sign-in',
        { email: `nobody${i}@example.com`, password: `guess ${i}` },
        fromAddress('10.2.0.1'),
      ),
    ),
  )
  const refused = pages.filter((page) => page.status === 429)
  expect(pages.filter((page) => page.status === 401).length).toBeLessThanOrEqual(ADMITTED)
  expect(refused.length).toBeGreaterThanOrEqual(wave - ADMITTED)
  for (const page of refused) {
    expect(page.headers.get('retry-after')).toBe('1')
    expect(page.html).toContain('Too many password checks at once')
  }
  expect(server.logs.filter((entry) => entry.level === 'error')).toEqual([])
})

test('password changes with a wrong current password go through the same gate: a parallel wave past it gets 429', async () => {
  const client = ConsoleClient.for(server)
  await client.get('/console/sign-in', fromAddress('10.3.0.1').headers)
  expect(
    (
      await client.post(
        '/console/sign-in',
        { email: 'operator@example.com', password: PASSWORD },
        fromAddress('10.3.0.1'),
      )
    ).status,
  ).toBe(303)
  await client.get('/console/account')
  // One address per change, and no more than the account takes before it is slowed: only the gate can refuse.
  const wave = ACCOUNT_SLOW_AFTER
  const pages = await Promise.all(
    Array.from({ length: wave }, (_, i) =>
      client.post(
        '/console/account/password',
        { current: `not the password ${i}`, password: 'a new password here' },
        fromAddress(`10.3.1.${i}`),
      ),
    ),
  )
  const refused = pages.filter((page) => page.status === 429)
  expect(pages.filter((page) => page.status === 400).length).toBeLessThanOrEqual(ADMITTED)
  expect(refused.length).toBeGreaterThanOrEqual(wave - ADMITTED)
  for (const page of refused) {
    expect(page.headers.get('retry-after')).toBe('1')
    expect(page.html).toContain('Too many password checks at once')
  }
})

test('begin counts the attempt at once; a success takes its count back from the address', () => {
  const throttle = new SignInThrottle(new ManualClock())
  const attempt = (email: string, address: string, succeeded: boolean) => {
    throttle.begin(email, address)
    throttle.finish(email, address, succeeded ? 'succeeded' : 'failed')
  }
  // Successes cost the address nothing: it still has its whole allowance of failures.
  for (let i = 0; i < FAILURES_PER_ADDRESS; i++) attempt(`ok${i}@example.com`, '10.0.0.1', true)
  for (let i = 0; i < FAILURES_PER_ADDRESS; i++) attempt(`bad${i}@example.com`, '10.0.0.1', false)
  expect(() => throttle.begin('c@example.com', '10.0.0.1')).toThrow('Too many wrong passwords')
  // Attempts still in flight already count against the account from that address.
  const inFlight = FAILURES_PER_ACCOUNT_AND_ADDRESS - 2
  for (let i = 0; i < inFlight; i++) throttle.begin('d@example.com', '10.0.1.1')
  for (let i = inFlight; i < FAILURES_PER_ACCOUNT_AND_ADDRESS; i++) attempt('d@example.com', '10.0.1.1', false)
  expect(() => throttle.begin('d@example.com', '10.0.1.1')).toThrow('Too many wrong passwords')
})
