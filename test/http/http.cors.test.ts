/** CORS (spec General conventions 7). */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestServer, type TestServer } from '../support/harness.ts'

let server: TestServer
beforeAll(async () => {
  server = await startTestServer({
    env: { CORS_CONSOLE_ORIGIN: 'https://console.pigeonhole.test', CORS_WILDCARD_ORIGIN: 'https://*.example.com' },
  })
})
afterAll(() => server.stop())

const ALLOWED = [
  'http://localhost',
  'http://localhost:3000',
  'http://localhost:65535',
  'http://127.0.0.1',
  'http://127.0.0.1:5173',
  'https://console.pigeonhole.test',
  'https://app.example.com',
  'https://pr-42.example.com',
  'https://pr-42.example.com:8443',
]
const REFUSED = [
  'https://evil.test',
  'https://evilexample.com', // lookalike suffix of *.example.com
  'https://example.com', // the family's apex is not in the family
  'https://app.example.com.evil.test',
  'https://app.example.co',
  'http://app.example.com', // scheme differs from the configured family
  'http://console.pigeonhole.test', // scheme differs from the console origin
  'https://console.pigeonhole.test:8443',
  'https://console.pigeonhole.test.evil.test',
  'https://evilconsole.pigeonhole.test',
  'https://localhost:3000', // the spec names http:// for local hosts
  'http://localhost.evil.test',
  'http://localhost:3000.evil.test',
  'http://127.0.0.1.evil.test',
  'http://127.0.0.2:3000',
  'http://0.0.0.0:3000',
  'http://[::1]:3000',
  'http://localhost:3000/path',
  'http://localhost:abc',
  'null',
  '*',
  'https://*.example.com',
  'https://app_.example.com',
  'https://-app.example.com',
]

describe('simple requests', () => {
  for (const origin of ALLOWED) {
    test(`${origin} is granted`, async () => {
      const response = await server.get('/health', null, { origin })
      expect(response.headers.get('access-control-allow-origin')).toBe(origin)
      expect(response.headers.get('vary') ?? '').toContain('Origin')
      const exposed = (response.headers.get('access-control-expose-headers') ?? '').toLowerCase()
      expect(exposed).toContain('x-request-id')
      expect(exposed).toContain('retry-after')
    })
  }
  for (const origin of REFUSED) {
    test(`${origin} gets no grant`, async () => {
      const response = await server.get('/health', null, { origin })
      expect(response.headers.get('access-control-allow-origin')).toBeNull()
      expect(response.headers.get('access-control-allow-credentials')).toBeNull()
    })
  }

  test('errors carry the grant too, so browser code can read the error envelope', async () => {
    const response = await server.get('/v1/usage', null, { origin: 'http://localhost:3000' })
    expect(response.status).toBe(401)
    expect(response.headers.get('access-control-allow-origin')).toBe('http://localhost:3000')
  })
})

describe('preflight', () => {
  const preflight = (origin: string, method = 'POST', headers = 'authorization, idempotency-key, content-type') =>
    server.request('OPTIONS', '/v1/inboxes', {
      headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': headers },
    })

  test('an allowed origin may send Authorization and Idempotency-Key with every method used', async () => {
    for (const origin of ['http://localhost:8080', 'https://console.pigeonhole.test', 'https://ci.example.com']) {
      const response = await preflight(origin)
      expect(response.status).toBeLessThan(300)
      expect(response.headers.get('access-control-allow-origin')).toBe(origin)
      const allowedHeaders = (response.headers.get('access-control-allow-headers') ?? '').toLowerCase().split(/\s*,\s*/)
      expect(allowedHeaders).toEqual(expect.arrayContaining(['authorization', 'idempotency-key', 'content-type']))
      const methods = (response.headers.get('access-control-allow-methods') ?? '').split(/\s*,\s*/)
      expect(methods).toEqual(expect.arrayContaining(['GET', 'POST', 'DELETE']))
    }
  })

  test('preflight needs no key', async () => {
    const response = await server.request('OPTIONS', `/v1/inboxes/inbox_${'0'.repeat(32)}`, {
      headers: { origin: 'http://127.0.0.1:3000', 'access-control-request-method': 'DELETE' },
    })
    expect(response.status).toBeLessThan(300)
    expect(response.headers.get('access-control-allow-origin')).toBe('http://127.0.0.1:3000')
  })

  for (const origin of ['https://evilexample.com', 'http://app.example.com', 'https://evil.test']) {
    test(`a refused origin (${origin}) gets no grant`, async () => {
      const response = await preflight(origin)
      expect(response.headers.get('access-control-allow-origin')).toBeNull()
      expect(response.headers.get('access-control-allow-headers')).toBeNull()
      expect(response.headers.get('access-control-allow-methods')).toBeNull()
    })
  }
})

test('without CORS_CONSOLE_ORIGIN and CORS_WILDCARD_ORIGIN only the local origins are granted', async () => {
  const plain = await startTestServer()
  try {
    expect(
      (await plain.get('/health', null, { origin: 'http://localhost:3000' })).headers.get(
        'access-control-allow-origin',
      ),
    ).toBe('http://localhost:3000')
    for (const origin of ['https://console.pigeonhole.test', 'https://app.example.com', 'https://evil.test']) {
      expect((await plain.get('/health', null, { origin })).headers.get('access-control-allow-origin')).toBeNull()
    }
  } finally {
    await plain.stop()
  }
})
