/**
 * CLIENT_ADDRESS_HEADER is believed only from a peer in TRUSTED_PROXIES and only when it holds
 * one IP address; otherwise the console counts, stores and audits the connection's address.
 * The sign-in throttle keeps client input in bounded keys.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ManualClock } from '../../src/clock.ts'
import { MAX_KEY_LENGTH } from '../../src/core/common/bounded-key-map.ts'
import { FAILURES_PER_ADDRESS, SignInThrottle } from '../../src/core/users/sign-in-throttle.ts'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { ConsoleClient, PASSWORD, setUp } from '../support/console-client.ts'

const HEADER = 'X-Client-IP'

/** The client addresses of the sessions opened so far, oldest first (each sign-in takes milliseconds: no ties). */
async function sessionAddresses(server: TestServer): Promise<string[]> {
  return (await server.query('select client_address from sessions order by created_at')).map(
    (row) => row.client_address,
  )
}

async function signIn(server: TestServer, headerValue: string, password = PASSWORD, email = 'operator@example.com') {
  const client = ConsoleClient.for(server)
  await client.get('/console/sign-in')
  return client.post('/console/sign-in', { email, password, next: '/console' }, { headers: { [HEADER]: headerValue } })
}

describe('from a peer outside TRUSTED_PROXIES (the default list has no loopback)', () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer({ env: { CLIENT_ADDRESS_HEADER: HEADER } })
    await setUp(server)
  })
  afterAll(() => server.stop())

  test('a new address in the header for each failed sign-in does not escape the per-address count', async () => {
    const statuses: number[] = []
    for (let i = 0; i < FAILURES_PER_ADDRESS + 5; i++) {
      // A different made-up account each time, so only the address count can refuse.
      statuses.push((await signIn(server, `198.51.100.${i + 1}`, 'wrong password', `nobody${i}@example.com`)).status)
    }
    expect(statuses.slice(0, FAILURES_PER_ADDRESS).every((status) => status === 401)).toBe(true)
    expect(statuses.slice(FAILURES_PER_ADDRESS)).toEqual(Array(5).fill(429))
  })
})

describe('from a trusted proxy', () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startTestServer({ env: { CLIENT_ADDRESS_HEADER: HEADER, TRUSTED_PROXIES: '127.0.0.1, ::1' } })
    await setUp(server)
  })
  afterAll(() => server.stop())

  test('one IPv4 or IPv6 address in the header is the client address of the session', async () => {
    expect((await signIn(server, '203.0.113.5')).status).toBe(303)
    expect((await signIn(server, ' 2001:DB8::7 ')).status).toBe(303)
    expect((await sessionAddresses(server)).slice(-2)).toEqual(['203.0.113.5', '2001:db8::7'])
  })

  test('anything but one address falls back to the connection address', async () => {
    const hostile = [
      'not an address',
      '203.0.113.5, 10.0.0.1',
      '203.0.113.5:443',
      '<script>alert(1)</script>',
      'x'.repeat(8000),
    ]
    for (const value of hostile) expect((await signIn(server, value)).status).toBe(303)
    const stored = (await sessionAddresses(server)).slice(-hostile.length)
    expect(stored).toHaveLength(hostile.length)
    for (const address of stored) expect(['127.0.0.1', '::1', '::ffff:127.0.0.1']).toContain(address)
  })
})

test("the throttle's keys stay short however long the email or address it is given", () => {
  const throttle = new SignInThrottle(new ManualClock())
  const longAddress = 'a'.repeat(16 * 1024)
  for (let i = 0; i < FAILURES_PER_ADDRESS; i++)
    throttle.recordFailure(`user${i}@${'d'.repeat(240)}.example`, longAddress)
  // Counted as one address all the same, so its count still ends in a refusal.
  expect(() => throttle.check('someone@example.com', longAddress)).toThrow('Too many wrong passwords from your address')
  const keys = [...(throttle as unknown as { failures: Map<string, unknown> }).failures.keys()]
  // One count per account, one per account and address, and the address's one.
  expect(keys).toHaveLength(2 * FAILURES_PER_ADDRESS + 1)
  for (const key of keys) expect(key.length).toBeLessThanOrEqual(MAX_KEY_LENGTH)
})
