/**
 * The edges of HTTP that Bun passes to the app unchecked: the Host header, CONNECT, the
 * request target, repeated parameters and slow bodies. Each answers a 4xx with the
 * envelope and X-Request-Id, never a 500, and a client using the API at the same time is
 * served throughout.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { rawHttp, trickleRequest } from '../support/raw-http.ts'

let server: TestServer
let key: string
let port: number
beforeAll(async () => {
  server = await startTestServer({
    env: { HTTP_BODY_TIMEOUT_MS: '1000', LIMIT_REQUESTS_PER_KEY: '100000', LIMIT_REQUESTS_PER_ORG: '100000' },
  })
  key = (await server.tenant()).key
  port = Number(new URL(server.url).port)
})
afterAll(() => server.stop())
afterEach(async () => {
  expect(server.logs.filter((line) => line.event === 'unhandled_error')).toEqual([])
  expect((await server.get('/health')).status).toBe(200)
})

/** Asserts a 400 bad_request envelope whose request_id matches the header. */
function expectBadRequest(response: Awaited<ReturnType<typeof rawHttp>>) {
  expect(response.status).toBe(400)
  const requestId = response.headers['x-request-id']
  expect(requestId).toMatch(/^req_[0-9a-f]{24}$/)
  const body = JSON.parse(response.body)
  expect(body.error.code).toBe('bad_request')
  expect(body.error.request_id).toBe(requestId)
  expect(response.headers.connection).toBe('close')
}

const request = (head: string) => rawHttp(port, `${head}\r\n\r\n`)

describe('Host header (RFC 9112 §3.2)', () => {
  const malformed: Record<string, string> = {
    'a space': 'a b',
    'a port over 65535': 'x:99999',
    'an empty value': '',
    'a non-ASCII name': 'é',
    'a path in it': 'example.test/evil',
    'a userinfo': 'user@example.test',
    'an unclosed IPv6 literal': '[::1',
    'a non-numeric port': 'example.test:http',
  }
  for (const [name, host] of Object.entries(malformed)) {
    test(`${name} is 400 bad_request on /health and on /v1 before authentication`, async () => {
      expectBadRequest(await request(`GET /health HTTP/1.1\r\nHost: ${host}\r\nConnection: close`))
      expectBadRequest(
        await request(`GET /v1/usage HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${key}\r\nConnection: close`),
      )
    })
  }

  test('two Host headers are 400 bad_request', async () => {
    expectBadRequest(await request('GET /health HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\nConnection: close'))
  })

  test('HTTP/1.0 without Host is 400 bad_request', async () => {
    expectBadRequest(await request('GET /health HTTP/1.0'))
  })

  test('valid forms are served: name, name:port, IPv4:port, IPv6 literal, absolute-form target', async () => {
    for (const host of ['example.test', 'example.test:8080', '127.0.0.1:1', '[::1]:3000', '[2001:db8::1]']) {
      const response = await request(`GET /health HTTP/1.1\r\nHost: ${host}\r\nConnection: close`)
      expect({ host, status: response.status }).toEqual({ host, status: 200 })
    }
    const absolute = await request('GET http://elsewhere.test/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close')
    expect(absolute.status).toBe(200)
  })
})

describe('methods and targets', () => {
  test('CONNECT is 400 bad_request and the connection is closed, not turned into a tunnel', async () => {
    expectBadRequest(await request('CONNECT example.test:443 HTTP/1.1\r\nHost: example.test:443'))
  })

  test('TRACE and WebDAV methods are answered with the not_found envelope', async () => {
    for (const method of ['TRACE', 'PROPFIND']) {
      const response = await request(
        `${method} /v1/inboxes HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nConnection: close`,
      )
      expect({ method, status: response.status }).toEqual({ method, status: 404 })
      expect(JSON.parse(response.body).error.request_id).toBe(response.headers['x-request-id'])
    }
  })
})

describe('repeated query parameters', () => {
  test('subject given twice is 422 invalid_subject; each other filter given twice is its own code', async () => {
    const inbox = (await server.post('/v1/inboxes', key)).body.data
    const path = `/v1/inboxes/${inbox.id}/messages`
    const twice = await server.get(`${path}?subject=a&subject=b`, key)
    expect(twice.status).toBe(422)
    expect(twice.body.error.code).toBe('invalid_subject')
    expect((await server.get(`${path}?sender_domain=a.test&sender_domain=b.test`, key)).body.error.code).toBe(
      'invalid_sender_domain',
    )
    // Once is fine, and so is an empty value.
    expect((await server.get(`${path}?subject=a`, key)).status).toBe(200)
    expect((await server.get(`${path}?subject=`, key)).status).toBe(200)
  })
})

describe('slow bodies', () => {
  /** A createInbox request whose body then trickles one byte every `everyMs`. */
  const trickle = (bytes: string, everyMs: number) =>
    trickleRequest(
      port,
      `POST /v1/inboxes HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${bytes.length}\r\nConnection: close\r\n\r\n`,
      bytes,
      everyMs,
    )

  test('a body that does not arrive within HTTP_BODY_TIMEOUT_MS is 408 request_timeout and the connection closes', async () => {
    // About 7 s in all; the budget is 1 s. The bound below sits between the two with room
    // for a busy machine: a body read to its end would take the full 7 s.
    const slow = trickle('{"prefix":"slow-body-inbox"}', 250)
    const startedAt = performance.now()
    // A legitimate client is served while the slow one holds its request open.
    const created = await server.post('/v1/inboxes', key, { prefix: 'fast-client' })
    expect(created.status).toBe(201)
    await slow.done
    expect(performance.now() - startedAt).toBeLessThan(5_000)
    const [head = '', body = ''] = slow.text().split('\r\n\r\n')
    expect(head).toStartWith('HTTP/1.1 408')
    const envelope = JSON.parse(body)
    expect(envelope.error.code).toBe('request_timeout')
    expect(head.toLowerCase()).toContain(`x-request-id: ${envelope.error.request_id}`)
    // Nothing was created for the timed-out request.
    const names = (await server.get('/v1/inboxes', key)).body.data.map(
      (inbox: { local_part: string }) => inbox.local_part,
    )
    expect(names).not.toContain('slow-body-inbox')
  })

  test('a body trickling within the budget is accepted as usual', async () => {
    // 24 bytes 5 ms apart: about 120 ms of the 1 s budget, with room for a busy machine's timers.
    const slow = trickle('{"prefix":"steady-body"}', 5)
    await slow.done
    expect(slow.text()).toStartWith('HTTP/1.1 201')
  })
})

describe("Bun's own refusals (before the app sees the request)", () => {
  // Bun answers these itself, without calling the app, so they carry no X-Request-Id and
  // no envelope (documented in the README). What matters here: an answer, and no harm.
  test('an HTTP/2 request line, an asterisk target, a header without a colon and an unknown method are refused and the server stays up', async () => {
    expect((await request('GET /health HTTP/2.0\r\nHost: 127.0.0.1\r\nConnection: close')).status).toBe(505)
    expect((await request('OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close')).status).toBe(400)
    expect((await request('GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nNoColonHere\r\nConnection: close')).status).toBe(
      400,
    )
    // A method token Bun does not know: the connection is closed without an answer.
    const unknownMethod = await request('BREW /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close')
    expect(unknownMethod.raw).toBe('')
  })
})
