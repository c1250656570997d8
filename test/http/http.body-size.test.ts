/**
 * Request bodies are read up to 64 KiB: oversized createInbox bodies get the error envelope
 * (never a bare 413) and cost no memory, and a body under the limit is judged by its content.
 */
import { afterAll, afterEach, beforeAll, expect, test } from 'bun:test'
import { errorCode, startTestServer, type TestServer, type Tenant } from '../support/harness.ts'
import { expectError } from '../support/shapes.ts'

let server: TestServer
let tenant: Tenant
beforeAll(async () => {
  server = await startTestServer()
  tenant = await server.tenant()
})
afterAll(() => server.stop())
afterEach(async () => {
  // Nothing reached the unexpected-failure path, and the server still answers.
  expect(server.logs.filter((line) => line.event === 'unhandled_error')).toEqual([])
  expect((await server.get('/health')).status).toBe(200)
})

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
  const response = await fetch(`${server.url}/v1/inboxes`, {
    method: 'POST',
    body,
    headers: { authorization: `Bearer ${tenant.key}` },
  })
  expect(response.status).toBe(422)
  const parsed = { status: response.status, headers: response.headers, body: await response.json(), text: '' }
  expect(errorCode(parsed)).toBe('invalid_json')
  expect((await server.get('/v1/inboxes', tenant.key)).body.data).toEqual([])
})

test('a body of exactly 64 KiB is read (whitespace around a valid object is fine)', async () => {
  const json = '{"prefix":"exactly-64k"}'
  const response = await server.request('POST', '/v1/inboxes', {
    key: tenant.key,
    rawBody: json + ' '.repeat(64 * 1024 - json.length),
  })
  expect(response.status).toBe(201)
  expect(response.body.data.local_part).toBe('exactly-64k')
})

test('a body over 64 KiB is 422 invalid_json with the envelope, from Content-Length alone', async () => {
  const response = await fetch(`${server.url}/v1/inboxes`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json' },
    body: '{"prefix":"' + 'a'.repeat(2 * 1024 * 1024) + '"}',
  })
  expect(response.status).toBe(422)
  const body = (await response.json()) as any
  expect(body.error.code).toBe('invalid_json')
  expect(body.error.request_id).toBe(response.headers.get('x-request-id')!)
})

test('a chunked body without Content-Length is cut off at 64 KiB the same way', async () => {
  const chunk = new TextEncoder().encode('a'.repeat(16 * 1024))
  let sent = 0
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent++ < 64)
        controller.enqueue(chunk) // 1 MiB in all, unless the server stops reading
      else controller.close()
    },
  })
  const response = await fetch(`${server.url}/v1/inboxes`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tenant.key}` },
    body: stream,
    duplex: 'half',
  } as RequestInit)
  expect(response.status).toBe(422)
  expect(((await response.json()) as any).error.code).toBe('invalid_json')
})

test('a body just under the limit is parsed and refused for what it is, without echoing it', async () => {
  const response = await server.request('POST', '/v1/inboxes', {
    key: tenant.key,
    rawBody: JSON.stringify({ prefix: 'a'.repeat(60_000) }),
  })
  expectError(response, 422, 'invalid_prefix')
  expect(response.text.length).toBeLessThan(1000)
})
