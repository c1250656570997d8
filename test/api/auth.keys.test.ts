/** Authentication (spec Authentication) and X-Request-Id on every response (General conventions 5). */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { expectError } from '../support/shapes.ts'

let server: TestServer
beforeAll(async () => {
  server = await startTestServer()
})
afterAll(() => server.stop())

const ROUTES: Array<[string, string]> = [
  ['POST', '/v1/inboxes'],
  ['GET', '/v1/inboxes'],
  ['GET', `/v1/inboxes/inbox_${'0'.repeat(32)}`],
  ['DELETE', `/v1/inboxes/inbox_${'0'.repeat(32)}`],
  ['GET', '/v1/usage'],
  ['GET', '/v1/no-such-route'],
  ['GET', '/v1'],
]

describe('401 invalid_api_key', () => {
  const hex16 = 'a'.repeat(16)
  const hex48 = 'b'.repeat(48)
  const headers: Array<[string, Record<string, string>]> = [
    ['no Authorization header', {}],
    ['an empty header', { authorization: '' }],
    ['the scheme alone', { authorization: 'Bearer' }],
    ['the scheme and a space', { authorization: 'Bearer ' }],
    ['Basic credentials', { authorization: `Basic ${btoa('user:pass')}` }],
    ['a key without the scheme', { authorization: `ph_live_${hex16}_${hex48}` }],
    ['a test-mode prefix', { authorization: `Bearer ph_test_${hex16}_${hex48}` }],
    ['uppercase hex', { authorization: `Bearer ph_live_${hex16.toUpperCase()}_${hex48}` }],
    ['a short public id', { authorization: `Bearer ph_live_${'a'.repeat(15)}_${hex48}` }],
    ['a long secret', { authorization: `Bearer ph_live_${hex16}_${hex48}b` }],
    ['a short secret', { authorization: `Bearer ph_live_${hex16}_${'b'.repeat(47)}` }],
    ['a non-hex character', { authorization: `Bearer ph_live_${'g'.repeat(16)}_${hex48}` }],
    ['two keys', { authorization: `Bearer ph_live_${hex16}_${hex48} ph_live_${hex16}_${hex48}` }],
    ['a well-formed but unknown key', { authorization: `Bearer ph_live_${hex16}_${hex48}` }],
    ['a very long token', { authorization: `Bearer ${'x'.repeat(8000)}` }],
  ]
  for (const [label, h] of headers) {
    test(label, async () => {
      for (const [method, path] of ROUTES) {
        const response = await server.request(method, path, { headers: h })
        expectError(response, 401, 'invalid_api_key')
      }
    })
  }

  test('a known public id with a wrong secret', async () => {
    const { key } = server.tenant()
    const wrong = key.slice(0, -1) + (key.endsWith('0') ? '1' : '0')
    expectError(await server.get('/v1/usage', wrong), 401, 'invalid_api_key')
    expect((await server.get('/v1/usage', key)).status).toBe(200)
  })

  test('all 401s are alike: the message does not tell unknown from malformed', async () => {
    const { key } = server.tenant()
    const messages = new Set<string>()
    for (const token of [null, 'junk', `ph_live_${hex16}_${hex48}`, key.slice(0, -1) + (key.endsWith('0') ? '1' : '0')]) {
      messages.add((await server.get('/v1/usage', token)).body.error.message)
    }
    expect(messages.size).toBe(1)
  })

  test('authentication comes before validation and routing', async () => {
    expectError(await server.get('/v1/inboxes?limit=0'), 401, 'invalid_api_key')
    expectError(await server.request('POST', '/v1/inboxes', { rawBody: '[', headers: { 'idempotency-key': 'x' } }), 401, 'invalid_api_key')
  })

  test('the scheme is case-insensitive (RFC 9110 section 11.1)', async () => {
    const { key } = server.tenant()
    for (const scheme of ['bearer', 'BEARER', 'Bearer']) {
      expect((await server.get('/v1/usage', null, { authorization: `${scheme} ${key}` })).status).toBe(200)
    }
  })

  test('request logs name the key by its public id and never hold a secret', async () => {
    const { key } = server.tenant()
    await server.get('/v1/usage', key)
    const bogus = `ph_live_${'c'.repeat(16)}_${'d'.repeat(48)}`
    await server.get('/v1/usage', bogus)
    const logged = JSON.stringify(server.logs)
    expect(logged).toContain(key.slice(8, 24))
    expect(logged).not.toContain(key.slice(25))
    expect(logged).not.toContain('d'.repeat(48))
  })

  test('GET /health needs no key, and ignores a bad one', async () => {
    for (const h of [{}, { authorization: 'Bearer junk' }] as Record<string, string>[]) {
      const response = await server.get('/health', null, h)
      expect(response.status).toBe(200)
      expect(response.body).toEqual({ status: 'ok', service: 'pigeonhole' })
      expect(response.headers.get('x-request-id')).toMatch(/^\S{8,}$/)
    }
  })
})

describe('X-Request-Id', () => {
  test('is on every response, unique, and repeated as error.request_id', async () => {
    const { key } = server.tenant()
    const created = await server.post('/v1/inboxes', key)
    const responses = [
      await server.get('/health'),
      created,
      await server.get('/v1/inboxes', key),
      await server.get(`/v1/inboxes/${created.body.data.id}`, key),
      await server.get('/v1/usage', key),
      await server.get('/openapi/json'),
      await server.get('/v1/usage'),
      await server.get('/no-such-route'),
      await server.get('/v1/no-such-route', key),
      await server.request('PUT', '/v1/inboxes', { key }),
      await server.request('PATCH', '/health'),
      await server.request('OPTIONS', '/v1/inboxes', { headers: { origin: 'http://localhost:3000', 'access-control-request-method': 'POST' } }),
      await server.get('/v1/inboxes?limit=0', key),
      await server.delete(`/v1/inboxes/${created.body.data.id}`, key),
      await server.delete(`/v1/inboxes/${created.body.data.id}`, key),
    ]
    const ids = responses.map((r) => r.headers.get('x-request-id'))
    for (const id of ids) expect(id).toMatch(/^req_[0-9a-f]{24}$/)
    expect(new Set(ids).size).toBe(ids.length)
    for (const r of responses.filter((r) => r.status >= 400)) expect(r.body.error.request_id).toBe(r.headers.get('x-request-id')!)
  })

  test('unknown routes answer 404 with the error envelope', async () => {
    const { key } = server.tenant()
    for (const path of ['/no-such-route', '/v1/no-such-route', '/v2/inboxes', '/v1/inboxes/x/y/z']) {
      const response = await server.get(path, key)
      expect(`${path} ${response.status}`).toBe(`${path} 404`)
      expect(response.body.error.request_id).toBe(response.headers.get('x-request-id')!)
    }
  })

  test('a client-sent X-Request-Id is not echoed (ids are ours)', async () => {
    const response = await server.get('/health', null, { 'x-request-id': 'client-chosen' })
    expect(response.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{24}$/)
  })
})
