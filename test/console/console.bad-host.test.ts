/**
 * A malformed Host or request target on a console path is refused with a plain 400 before
 * the console parses the URL: no 500, no error log, the connection closes. The API answers
 * the same requests with its 400 envelope.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { rawHttp } from '../support/raw-http.ts'

let server: TestServer
let port: number
beforeAll(async () => {
  server = await startTestServer()
  port = Number(new URL(server.url).port)
})
afterAll(() => server.stop())

// Hosts Bun passes through to the app (it refuses `a b` or an empty Host itself). Each is
// refused by the Host pattern or, for `%zz`, by the URL parser behind it.
const MALFORMED_HOSTS = ['exa[mple', '[::1', 'x:99999', '%zz', '[zz]', 'a,b']

test.each(MALFORMED_HOSTS)(
  'Host %p on console paths is 400 with the console headers, and the API says 400 too',
  async (host) => {
    for (const path of ['/console', '/console/sign-in', '/setup?token=x']) {
      const response = await rawHttp(port, `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`)
      expect(response.status).toBe(400)
      expect(response.headers.connection).toBe('close')
      expect(response.headers['content-security-policy']).toContain("default-src 'none'")
      expect(response.body).toMatch(/^The (Host header|request target) /)
    }
    const api = await rawHttp(port, `GET /health HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`)
    expect(api.status).toBe(400)
    expect(JSON.parse(api.body).error.code).toBe('bad_request')
    expect(server.logs.filter((line) => line.level === 'error')).toEqual([])
  },
)

test('the refusal is logged as one console_request line with its path and status', async () => {
  await rawHttp(port, `GET /console/sign-in HTTP/1.1\r\nHost: exa[mple\r\nConnection: close\r\n\r\n`)
  const line = server.logs.findLast((entry) => entry.event === 'console_request')
  expect(line).toMatchObject({ method: 'GET', path: '/console/sign-in', status: 400 })
})

test('a well-formed Host still reaches the console', async () => {
  const response = await rawHttp(port, `GET /console/sign-in HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`)
  expect(response.status).toBe(200)
})
