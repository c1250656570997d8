/**
 * Parallel sign-ins over real HTTP: every attempt is counted before its argon2id check, so a
 * wave of guesses sent at once cannot all pass the throttle, and only a few checks run at a time.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { ManualClock } from '../../src/clock.ts'
import { FAILURES_PER_ACCOUNT, FAILURES_PER_ADDRESS, MAX_CONCURRENT_VERIFICATIONS, SignInThrottle } from '../../src/core/console/sign-in-throttle.ts'
import { REAL_PASSWORD_COST, startTestServer, type TestServer } from '../support/harness.ts'
import { ConsoleClient, PASSWORD, setUp } from '../support/console-client.ts'

setDefaultTimeout(60_000)

// One server; each test signs in from its own client address (CLIENT_ADDRESS_HEADER), so the
// address counts one test leaves do not reach the next. Checks at the production cost: the
// waves assert what happens while several checks are in flight, which cheap ones never are.
let server: TestServer
beforeAll(async () => {
  // The test client is the trusted proxy here: only a peer in TRUSTED_PROXIES may set the header.
  server = await startTestServer({ env: { CLIENT_ADDRESS_HEADER: 'X-Test-Client', TRUSTED_PROXIES: '127.0.0.1, ::1', ...REAL_PASSWORD_COST } })
  await setUp(server, { email: 'operator@example.com' })
})
afterAll(() => server.stop())

const fromAddress = (address: string) => ({ headers: { 'x-test-client': address } })

function counts(statuses: number[]): Record<number, number> {
  const all: Record<number, number> = {}
  for (const status of statuses) all[status] = (all[status] ?? 0) + 1
  return all
}

test('a parallel wave of wrong passwords with the right one last does not sign in, and locks the account', async () => {
  const client = ConsoleClient.for(server)
  await client.get('/console/sign-in')
  const wave = 40
  const pages = await Promise.all(
    Array.from({ length: wave }, (_, i) =>
      client.post('/console/sign-in', { email: 'operator@example.com', password: i === wave - 1 ? PASSWORD : `wrong guess ${i}`, next: '/console' }, fromAddress('10.1.0.1')),
    ),
  )
  const statuses = counts(pages.map((page) => page.status))
  expect(statuses[303]).toBeUndefined()
  expect(statuses[401]).toBeLessThanOrEqual(Math.min(FAILURES_PER_ACCOUNT, MAX_CONCURRENT_VERIFICATIONS))
  expect((statuses[401] ?? 0) + (statuses[429] ?? 0)).toBe(wave)
  for (const page of pages.filter((candidate) => candidate.status === 429)) expect(Number(page.headers.get('retry-after'))).toBeGreaterThan(0)
  // Every refused guess was counted: the rest of the account's allowance, then even the right password is refused.
  for (let i = statuses[401] ?? 0; i < FAILURES_PER_ACCOUNT; i++) {
    expect((await client.post('/console/sign-in', { email: 'operator@example.com', password: `late guess ${i}`, next: '/console' }, fromAddress('10.1.0.1'))).status).toBe(401)
  }
  expect((await client.post('/console/sign-in', { email: 'operator@example.com', password: PASSWORD, next: '/console' }, fromAddress('10.1.0.2'))).status).toBe(429)
})

test('at most MAX_CONCURRENT_VERIFICATIONS password checks run at once; the rest get 429 with Retry-After', async () => {
  const client = ConsoleClient.for(server)
  await client.get('/console/sign-in')
  // Distinct made-up accounts, fewer than the address allows: only the concurrency cap can refuse.
  const wave = Math.min(FAILURES_PER_ADDRESS - 1, MAX_CONCURRENT_VERIFICATIONS * 3)
  const pages = await Promise.all(Array.from({ length: wave }, (_, i) => client.post('/console/sign-in', { email: `nobody${i}@example.com`, password: `guess ${i}` }, fromAddress('10.2.0.1'))))
  const refused = pages.filter((page) => page.status === 429)
  expect(pages.filter((page) => page.status === 401).length).toBeLessThanOrEqual(MAX_CONCURRENT_VERIFICATIONS)
  expect(refused.length).toBeGreaterThanOrEqual(wave - MAX_CONCURRENT_VERIFICATIONS)
  for (const page of refused) {
    expect(page.headers.get('retry-after')).toBe('1')
    expect(page.html).toContain('Too many sign-ins at once')
  }
  expect(server.logs.filter((entry) => entry.level === 'error')).toEqual([])
})

test('begin counts the attempt at once; a success takes its count back from the account and the address', () => {
  const throttle = new SignInThrottle(new ManualClock())
  const attempt = (email: string, address: string, succeeded: boolean) => {
    throttle.begin(email, address)
    throttle.finish(email, address, succeeded)
  }
  // Successes cost the address nothing: it still has its whole allowance of failures.
  for (let i = 0; i < FAILURES_PER_ADDRESS; i++) attempt(`ok${i}@example.com`, '10.0.0.1', true)
  for (let i = 0; i < FAILURES_PER_ADDRESS; i++) attempt(`bad${i}@example.com`, '10.0.0.1', false)
  expect(() => throttle.begin('c@example.com', '10.0.0.1')).toThrow('Too many failed sign-ins')
  // Attempts still in flight already count against the account.
  const inFlight = MAX_CONCURRENT_VERIFICATIONS - 1
  for (let i = 0; i < inFlight; i++) throttle.begin('d@example.com', `10.0.1.${i}`)
  for (let i = inFlight; i < FAILURES_PER_ACCOUNT; i++) attempt('d@example.com', `10.0.1.${i}`, false)
  expect(() => throttle.begin('d@example.com', '10.0.2.1')).toThrow('Too many failed sign-ins')
})
