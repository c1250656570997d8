/** Oversized createInbox bodies get the error envelope (never a bare 413), and cost no memory. */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { errorCode, startTestServer, type TestServer, type Tenant } from '../support/harness.ts'

let server: TestServer
let tenant: Tenant
beforeAll(async () => {
  server = await startTestServer()
  tenant = server.tenant()
})
afterAll(() => server.stop())

test.each([
  ['just over 64 KiB', 64 * 1024 + 1],
  ['2 MiB', 2 * 1024 * 1024],
  ['20 MiB', 20 * 1024 * 1024],
])('a %s body with Content-Length answers 422 invalid_json', async (_, bytes) => {
  const response = await server.request('POST', '/v1/inboxes', { key: tenant.key, rawBody: 'x'.repeat(bytes) })
  expect(response.status).toBe(422)
  expect(errorCode(response)).toBe('invalid_json')
})

test('a chunked body without Content-Length is cut off at 64 KiB', async () => {
  const chunk = new TextEncoder().encode(' '.repeat(10_000))
  const body = new ReadableStream({
    start(controller) {
      for (let i = 0; i < 100; i++) controller.enqueue(chunk)
      controller.close()
    },
  })
  const response = await fetch(`${server.url}/v1/inboxes`, { method: 'POST', body, headers: { authorization: `Bearer ${tenant.key}` } })
  expect(response.status).toBe(422)
  const parsed = { status: response.status, headers: response.headers, body: await response.json(), text: '' }
  expect(errorCode(parsed)).toBe('invalid_json')
  expect((await server.get('/v1/inboxes', tenant.key)).body.data).toEqual([])
})

test('a body of exactly 64 KiB is read (whitespace around a valid object is fine)', async () => {
  const json = '{"prefix":"exactly-64k"}'
  const response = await server.request('POST', '/v1/inboxes', { key: tenant.key, rawBody: json + ' '.repeat(64 * 1024 - json.length) })
  expect(response.status).toBe(201)
  expect(response.body.data.local_part).toBe('exactly-64k')
})
