/**
 * Authentication (spec Authentication): every malformed, unknown, wrong or revoked key is
 * 401 invalid_api_key, on a fixed set of routes and on every /v1 route the OpenAPI document
 * lists; health needs no key; logs never hold a secret.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { revokeKey } from '../../src/core/api-keys/keys.ts'
import { CLI_ACTOR } from '../../src/core/audit/audit.ts'
import { errorCode, startTestServer, type TestServer, type Tenant } from '../support/harness.ts'
import { documentedRoutes, fillPath, ownedResources, type DocumentedRoute } from '../support/routes.ts'
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
    const { key } = await server.tenant()
    const wrong = key.slice(0, -1) + (key.endsWith('0') ? '1' : '0')
    expectError(await server.get('/v1/usage', wrong), 401, 'invalid_api_key')
    expect((await server.get('/v1/usage', key)).status).toBe(200)
  })

  test('all 401s are alike: the message does not tell unknown from malformed', async () => {
    const { key } = await server.tenant()
    const messages = new Set<string>()
    for (const token of [
      null,
      'junk',
      `ph_live_${hex16}_${hex48}`,
      key.slice(0, -1) + (key.endsWith('0') ? '1' : '0'),
    ]) {
      messages.add((await server.get('/v1/usage', token)).body.error.message)
    }
    expect(messages.size).toBe(1)
  })

  test('authentication comes before validation and routing', async () => {
    expectError(await server.get('/v1/inboxes?limit=0'), 401, 'invalid_api_key')
    expectError(
      await server.request('POST', '/v1/inboxes', { rawBody: '[', headers: { 'idempotency-key': 'x' } }),
      401,
      'invalid_api_key',
    )
  })

  test('the scheme is case-insensitive (RFC 9110 section 11.1)', async () => {
    const { key } = await server.tenant()
    for (const scheme of ['bearer', 'BEARER', 'Bearer']) {
      expect((await server.get('/v1/usage', null, { authorization: `${scheme} ${key}` })).status).toBe(200)
    }
  })

  test('request logs name the key by its public id and never hold a secret', async () => {
    const { key } = await server.tenant()
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

describe('every /v1 route answers 401 invalid_api_key', () => {
  let owner: Tenant
  let revokedKey: string
  let ids: Record<string, string>
  let routes: DocumentedRoute[]
  beforeAll(async () => {
    owner = await server.tenant('owner')
    revokedKey = await server.extraKey(owner.organizationId)
    await revokeKey(server.app.services, CLI_ACTOR, { keyOrPublicId: revokedKey })
    ids = await ownedResources(server, owner.key)
    routes = await documentedRoutes(server)
    // The OpenAPI tests prove the document lists every operation; so this suite covers them all.
    expect(routes).toHaveLength(9)
  })

  const badKeys: Array<[string, () => Record<string, string>]> = [
    ['no Authorization header', () => ({})],
    ['a non-Bearer scheme', () => ({ authorization: `Basic ${owner.key}` })],
    ['a malformed key', () => ({ authorization: 'Bearer ph_live_nothex_nothex' })],
    [
      'an uppercase-hex key',
      () => ({ authorization: `Bearer ${owner.key.toUpperCase().replace('PH_LIVE_', 'ph_live_')}` }),
    ],
    ['an unknown key', () => ({ authorization: `Bearer ph_live_${'0'.repeat(16)}_${'0'.repeat(48)}` })],
    [
      'a known id with the wrong secret',
      () => ({ authorization: `Bearer ${owner.key.slice(0, -1)}${owner.key.endsWith('0') ? '1' : '0'}` }),
    ],
    ['a revoked key', () => ({ authorization: `Bearer ${revokedKey}` })],
  ]
  for (const [label, headers] of badKeys) {
    test(label, async () => {
      for (const route of routes) {
        const response = await server.request(route.method, fillPath(route.path, ids), { headers: headers() })
        expect(`${route.operationId} ${response.status}`).toBe(`${route.operationId} 401`)
        expect(errorCode(response)).toBe('invalid_api_key')
      }
    })
  }
})
