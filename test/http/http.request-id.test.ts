/** X-Request-Id on every response, repeated as error.request_id (spec General conventions 5). */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestServer, type TestServer } from '../support/harness.ts'

let server: TestServer
beforeAll(async () => {
  server = await startTestServer()
})
afterAll(() => server.stop())

describe('X-Request-Id', () => {
  test('is on every response, unique, and repeated as error.request_id', async () => {
    const { key } = await server.tenant()
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
      await server.request('OPTIONS', '/v1/inboxes', {
        headers: { origin: 'http://localhost:3000', 'access-control-request-method': 'POST' },
      }),
      await server.get('/v1/inboxes?limit=0', key),
      await server.delete(`/v1/inboxes/${created.body.data.id}`, key),
      await server.delete(`/v1/inboxes/${created.body.data.id}`, key),
    ]
    const ids = responses.map((r) => r.headers.get('x-request-id'))
    for (const id of ids) expect(id).toMatch(/^req_[0-9a-f]{24}$/)
    expect(new Set(ids).size).toBe(ids.length)
    for (const r of responses.filter((r) => r.status >= 400))
      expect(r.body.error.request_id).toBe(r.headers.get('x-request-id')!)
  })

  test('unknown routes answer 404 with the error envelope', async () => {
    const { key } = await server.tenant()
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
