/** Hostile input never yields a 500 or takes the process down. */
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { describeForBackends, startTestServer, type TestServer } from '../support/harness.ts'
import { rawHttp, rawRequest } from '../support/raw-http.ts'
import { expectError } from '../support/shapes.ts'

let server: TestServer
let key: string
beforeAll(async () => {
  server = await startTestServer({ env: { LIMIT_REQUESTS_PER_KEY: '100000', LIMIT_REQUESTS_PER_ORG: '100000' } })
  key = (await server.tenant()).key
})
afterAll(() => server.stop())
afterEach(async () => {
  // Nothing reached the unexpected-failure path, and the server still answers.
  expect(server.logs.filter((line) => line.event === 'unhandled_error')).toEqual([])
  expect((await server.get('/health')).status).toBe(200)
})

const post = (rawBody: string | Uint8Array, headers: Record<string, string> = {}) =>
  fetch(`${server.url}/v1/inboxes`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, ...headers },
    body: rawBody as BodyInit,
  })

describe('bodies', () => {
  test('a large body on GET and DELETE is not read into a failure', async () => {
    const big = 'x'.repeat(8 * 1024 * 1024)
    const usage = await fetch(`${server.url}/v1/usage`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${key}` },
      body: big,
    })
    expect(usage.status).toBe(404) // no DELETE on /v1/usage
    const { id } = (await server.post('/v1/inboxes', key)).body.data
    const deleted = await fetch(`${server.url}/v1/inboxes/${id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: big,
    })
    expect(deleted.status).toBe(204)
  })

  test('deeply nested JSON is invalid_json', async () => {
    for (const raw of [
      '['.repeat(200_000),
      '{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000),
      '['.repeat(50_000) + ']'.repeat(50_000),
    ]) {
      const response = await server.request('POST', '/v1/inboxes', { key, rawBody: raw })
      expect(response.status).toBe(422)
      expect(['invalid_json', 'unknown_property']).toContain(response.body.error.code)
    }
  })

  test('binary junk under any content type is invalid_json', async () => {
    const junk = new Uint8Array(4096).map((_, i) => (i * 7919 + 13) % 256)
    for (const type of [
      'application/json',
      'application/octet-stream',
      'multipart/form-data; boundary=x',
      'application/x-www-form-urlencoded',
      'text/plain; charset=utf-16',
      'garbage/;;;',
    ]) {
      const response = await post(junk, { 'content-type': type })
      expect(`${type} ${response.status}`).toBe(`${type} 422`)
      expect(((await response.json()) as any).error.code).toBe('invalid_json')
    }
  })

  test('a form body and a multipart body are invalid_json', async () => {
    const form = new FormData()
    form.set('prefix', 'from-a-form')
    expect(
      (
        await fetch(`${server.url}/v1/inboxes`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}` },
          body: form,
        })
      ).status,
    ).toBe(422)
    expect((await post('prefix=from-a-form', { 'content-type': 'application/x-www-form-urlencoded' })).status).toBe(422)
  })

  test('invalid UTF-8 and a byte-order mark do not crash the parser', async () => {
    for (const bytes of [
      [0xef, 0xbb, 0xbf, 0x7b, 0x7d],
      [0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d],
      [0xc0, 0x80],
    ]) {
      const response = await post(new Uint8Array(bytes), { 'content-type': 'application/json' })
      expect(response.status).toBeLessThan(500)
      expect([201, 422]).toContain(response.status)
    }
  })

  test('a broken body on GET and DELETE is ignored, whatever its content type', async () => {
    const owner = await server.tenant()
    for (const type of [
      'application/json',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=zz',
      'text/plain',
    ]) {
      const { id } = (await server.post('/v1/inboxes', owner.key)).body.data
      const auth = { Authorization: `Bearer ${owner.key}`, 'Content-Type': type }
      for (const path of ['/v1/usage', '/v1/inboxes', `/v1/inboxes/${id}`]) {
        expect(
          `${type} GET ${path} ${(await rawHttp(server.app.httpPort, rawRequest('GET', path, auth, '{broken'))).status}`,
        ).toEndWith(' 200')
      }
      expect(
        `${type} DELETE ${(await rawHttp(server.app.httpPort, rawRequest('DELETE', `/v1/inboxes/${id}`, auth, '{broken'))).status}`,
      ).toEndWith(' 204')
    }
  })
})

describe('headers', () => {
  test('odd Idempotency-Key values are validated, not crashed on', async () => {
    for (const value of [' '.repeat(10), '\t'.repeat(9) + 'x', 'ä'.repeat(10), 'x'.repeat(10_000)]) {
      const response = await rawHttp(
        server.app.httpPort,
        rawRequest('POST', '/v1/inboxes', { Authorization: `Bearer ${key}`, 'Idempotency-Key': value }),
      )
      expect(response.status).toBeLessThan(500)
      expect(response.headers['x-request-id']).toMatch(/^req_/)
    }
  })

  test('a repeated Idempotency-Key header is handled without a 500', async () => {
    const response = await rawHttp(
      server.app.httpPort,
      `POST /v1/inboxes HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer ${key}\r\nIdempotency-Key: first-key-1\r\nIdempotency-Key: second-key-2\r\nContent-Length: 0\r\n\r\n`,
    )
    expect(response.status).toBeLessThan(500)
  })

  test('non-ASCII and control-ish Authorization values are 401', async () => {
    for (const value of ['Bearer ph_live_é', 'Bearer\tph_live_x', 'Bearer ' + key + '\u00a0', '\u00ff'.repeat(100)]) {
      const response = await rawHttp(
        server.app.httpPort,
        Buffer.from(rawRequest('GET', '/v1/usage', { Authorization: value }), 'latin1'),
      )
      expect(response.status).toBe(401)
      expect(response.headers['x-request-id']).toMatch(/^req_/)
    }
  })

  test('a Content-Encoding the body does not have is not a 500', async () => {
    const response = await post('{}', { 'content-encoding': 'gzip', 'content-type': 'application/json' })
    expect(response.status).toBeLessThan(500)
  })

  test('many headers and a huge Origin are handled', async () => {
    const headers: Record<string, string> = { origin: 'http://localhost:' + '9'.repeat(5000) }
    for (let i = 0; i < 80; i++) headers[`x-junk-${i}`] = 'y'.repeat(50)
    const response = await server.get('/v1/usage', key, headers)
    expect(response.status).toBe(200)
    expect(response.headers.get('access-control-allow-origin')).toBeNull()
  })
})

describe('paths and queries', () => {
  test('very long ids are 404 inbox_not_found', async () => {
    for (const id of ['a'.repeat(5000), 'inbox_' + '0'.repeat(5000), '%F0%9F%90%A6'.repeat(200)]) {
      expectError(await server.get(`/v1/inboxes/${id}`, key), 404, 'inbox_not_found')
      expectError(await server.delete(`/v1/inboxes/${id}`, key), 404, 'inbox_not_found')
    }
  })

  test('broken percent-encoding in the path and the query is not a 500', async () => {
    for (const target of [
      '/v1/inboxes/%E0%A4%A',
      '/v1/inboxes/%',
      '/v1/inboxes/%ZZ',
      '/v1/inboxes?limit=%ZZ',
      '/v1/inboxes?cursor=%E0%A4%A',
      '/v1/inboxes?%=%',
      '/v1/%C0%AE%C0%AE/usage',
      '/v1/inboxes/..%2F..%2Fusage',
    ]) {
      const response = await rawHttp(server.app.httpPort, rawRequest('GET', target, { Authorization: `Bearer ${key}` }))
      expect(`${target} ${response.status < 500}`).toBe(`${target} true`)
      expect(response.headers['x-request-id']).toMatch(/^req_/)
    }
  })

  test('a very long path and a very long query string', async () => {
    for (const target of [
      '/' + 'x'.repeat(7000),
      '/v1/' + 'x/'.repeat(3000),
      '/v1/inboxes?' + 'a=1&'.repeat(1500),
      '/v1/inboxes?limit=' + '1'.repeat(5000),
    ]) {
      const response = await rawHttp(server.app.httpPort, rawRequest('GET', target, { Authorization: `Bearer ${key}` }))
      expect(response.status).toBeLessThan(500)
    }
  })

  test('a query with a bracketed or nested parameter name is handled', async () => {
    for (const query of [
      'limit[]=5',
      'limit[a]=5',
      'cursor[]=x',
      'limit=5&limit[]=6',
      '__proto__[limit]=1',
      'constructor=1',
    ]) {
      const response = await server.get(`/v1/inboxes?${query}`, key)
      expect(`${query} ${response.status}`).toMatch(/ (200|422)$/)
    }
  })

  test('unsupported methods on known paths are refused with the envelope, not a 500', async () => {
    for (const [method, path] of [
      ['PUT', '/v1/inboxes'],
      ['PATCH', '/v1/inboxes'],
      ['DELETE', '/v1/inboxes'],
      ['POST', `/v1/inboxes/inbox_${'0'.repeat(32)}`],
      ['POST', '/v1/usage'],
      ['DELETE', '/health'],
      ['TRACE', '/health'],
    ]) {
      const response = await rawHttp(
        server.app.httpPort,
        rawRequest(method!, path!, { Authorization: `Bearer ${key}` }),
      )
      expect(`${method} ${path} ${response.status}`).toMatch(/ 4\d\d$/)
      expect(response.headers['x-request-id']).toMatch(/^req_/)
    }
  })

  test('HEAD on a GET route does not crash', async () => {
    const response = await fetch(`${server.url}/v1/usage`, {
      method: 'HEAD',
      headers: { authorization: `Bearer ${key}` },
    })
    expect(response.status).toBeLessThan(500)
  })
})

test('a malformed request line is answered or closed, and the server stays up', async () => {
  for (const junk of [
    'GARBAGE\r\n\r\n',
    'GET / HTTP/9.9\r\n\r\n',
    '\x00\x01\x02\x03\r\n\r\n',
    'GET /health HTTP/1.1\r\nContent-Length: -5\r\n\r\n',
  ]) {
    const response = await rawHttp(server.app.httpPort, junk)
    // Bun answers some of these itself (400, or 505 for an unknown HTTP version); never 500.
    if (response.status) expect(response.status).not.toBe(500)
  }
})

test('50 concurrent junk requests leave the server healthy', async () => {
  const responses = await Promise.all(
    Array.from({ length: 50 }, (_, i) =>
      server.request('POST', '/v1/inboxes', { key, rawBody: i % 2 ? '[' : '{"prefix":' + i + '}' }),
    ),
  )
  for (const response of responses) expect(response.status).toBe(422)
})

describeForBackends(
  ['sqlite'],
  'closes the SQLite handle under a running server; a PostgreSQL database going away is test/multi/multi.faults.test.ts',
  'a failure nothing expects',
  () => {
    test('an unexpected failure is 500 internal_error with the envelope and the request id', async () => {
      const broken = await startTestServer()
      try {
        const tenant = await broken.tenant()
        broken.app.storage!.sqlite.close() // storage gone from under a running server
        for (const response of [
          await broken.get('/v1/inboxes', tenant.key),
          await broken.get('/v1/usage', tenant.key),
        ]) {
          expectError(response, 500, 'internal_error')
          expect(response.text).not.toContain('sqlite')
        }
        // /health is liveness alone: it never touches storage, so it still answers (readiness is /ready's).
        const health = await broken.get('/health')
        expect(health.status).toBe(200)
        expect(health.body).toEqual({ status: 'ok', service: 'pigeonhole' })
        expect(broken.logs.some((line) => line.event === 'unhandled_error' && line.request_id)).toBe(true)
      } finally {
        await broken.app.stop().catch(() => {})
        await broken.stop().catch(() => {})
      }
    })
  },
)
