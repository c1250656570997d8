/** HTTP rate limits by UTC minute: 120 per key, 600 per organisation (spec Limits, Errors). */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ManualClock } from '../../src/clock.ts'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { expectError } from '../support/shapes.ts'

let server: TestServer
const clock = new ManualClock()
beforeAll(async () => {
  server = await startTestServer({ clock })
})
afterAll(() => server.stop())

/** Sends `n` cheap authenticated requests and returns their statuses. */
async function burst(key: string, n: number, path = '/v1/usage'): Promise<number[]> {
  const statuses: number[] = []
  // Sequential batches keep the server busy without opening hundreds of sockets at once.
  for (let sent = 0; sent < n; sent += 40) {
    const batch = await Promise.all(Array.from({ length: Math.min(40, n - sent) }, () => server.get(path, key)))
    statuses.push(...batch.map((r) => r.status))
  }
  return statuses
}

describe('per key: 120 a minute', () => {
  test('the 121st request in a UTC minute is 429 with Retry-After to the next minute; the next minute admits again', async () => {
    clock.set('2026-02-03T10:15:30.250Z')
    const { key } = await server.tenant()
    expect(await burst(key, 120)).toEqual(Array(120).fill(200))

    const limited = await server.get('/v1/usage', key)
    expectError(limited, 429, 'rate_limit_exceeded')
    expect(limited.headers.get('retry-after')).toBe('30') // 29.75 s to 10:16:00, rounded up

    // Refused requests do not count; other routes share the budget.
    expectError(await server.post('/v1/inboxes', key), 429, 'rate_limit_exceeded')
    expectError(await server.get('/v1/inboxes?limit=0', key), 429, 'rate_limit_exceeded')
    expectError(await server.get('/v1/no-such-route', key), 429, 'rate_limit_exceeded')

    clock.set('2026-02-03T10:15:59.999Z')
    const lastMs = await server.get('/v1/usage', key)
    expectError(lastMs, 429, 'rate_limit_exceeded')
    expect(lastMs.headers.get('retry-after')).toBe('1')

    clock.set('2026-02-03T10:16:00.000Z')
    expect(await burst(key, 120)).toEqual(Array(120).fill(200))
    const again = await server.get('/v1/usage', key)
    expectError(again, 429, 'rate_limit_exceeded')
    expect(again.headers.get('retry-after')).toBe('60')
  })

  test('the window is the UTC minute, not a sliding 60 seconds', async () => {
    clock.set('2026-02-03T11:00:59.000Z')
    const { key } = await server.tenant()
    expect(await burst(key, 120)).toEqual(Array(120).fill(200))
    expectError(await server.get('/v1/usage', key), 429, 'rate_limit_exceeded')
    clock.set('2026-02-03T11:01:00.000Z') // one second later, a new minute
    expect((await server.get('/v1/usage', key)).status).toBe(200)
  })

  test('one key at its limit does not limit another key of the organisation, or another organisation', async () => {
    clock.set('2026-02-03T12:00:00.000Z')
    const a = await server.tenant()
    expect(await burst(a.key, 120)).toEqual(Array(120).fill(200))
    expectError(await server.get('/v1/usage', a.key), 429, 'rate_limit_exceeded')
    expect((await server.get('/v1/usage', await server.extraKey(a.organizationId))).status).toBe(200)
    expect((await server.get('/v1/usage', (await server.tenant()).key)).status).toBe(200)
  })

  test('unauthenticated requests and health do not count against anyone', async () => {
    clock.set('2026-02-03T13:00:00.000Z')
    const { key } = await server.tenant()
    for (let i = 0; i < 130; i++) expect((await server.get('/health')).status).toBe(200)
    expect(await burst(key, 120)).toEqual(Array(120).fill(200))
    // Health stays open for a rate-limited key, and a bad key is still 401 rather than 429.
    expectError(await server.get('/v1/usage', key), 429, 'rate_limit_exceeded')
    expect((await server.get('/health', key)).status).toBe(200)
    expectError(await server.get('/v1/usage', 'ph_live_junk'), 401, 'invalid_api_key')
  })
})

describe('per organisation: 600 a minute', () => {
  test('600 across five keys, then every key of the organisation is 429; other organisations are not', async () => {
    clock.set('2026-02-03T14:30:45.000Z')
    const org = await server.tenant()
    const keys = [org.key, ...(await Promise.all(Array.from({ length: 5 }, () => server.extraKey(org.organizationId))))]
    for (const key of keys.slice(0, 5)) expect(await burst(key, 120)).toEqual(Array(120).fill(200))
    const sixth = await server.get('/v1/usage', keys[5]!)
    expectError(sixth, 429, 'rate_limit_exceeded')
    expect(sixth.headers.get('retry-after')).toBe('15')
    expect((await server.get('/v1/usage', (await server.tenant()).key)).status).toBe(200)

    clock.set('2026-02-03T14:31:00.000Z')
    expect((await server.get('/v1/usage', keys[5]!)).status).toBe(200)
  })
})

test('LIMIT_REQUESTS_PER_KEY and LIMIT_REQUESTS_PER_ORG change the limits', async () => {
  const small = await startTestServer({ clock, env: { LIMIT_REQUESTS_PER_KEY: '3', LIMIT_REQUESTS_PER_ORG: '4' } })
  try {
    clock.set('2026-02-03T15:00:00.000Z')
    const org = await small.tenant()
    const second = await small.extraKey(org.organizationId)
    for (let i = 0; i < 3; i++) expect((await small.get('/v1/usage', org.key)).status).toBe(200)
    expectError(await small.get('/v1/usage', org.key), 429, 'rate_limit_exceeded')
    expect((await small.get('/v1/usage', second)).status).toBe(200)
    expectError(await small.get('/v1/usage', second), 429, 'rate_limit_exceeded')
  } finally {
    await small.stop()
  }
})
