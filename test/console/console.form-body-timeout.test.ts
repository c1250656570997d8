/**
 * Console forms get the same total body budget as /v1 bodies: a form trickled slower than
 * HTTP_BODY_TIMEOUT_MS is answered 408 and its connection closed, while others are served.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { ConsoleClient } from '../support/console-client.ts'
import { trickleRequest } from '../support/raw-http.ts'

let server: TestServer
let port: number
beforeAll(async () => {
  server = await startTestServer({ env: { HTTP_BODY_TIMEOUT_MS: '300' } })
  port = Number(new URL(server.url).port)
})
afterAll(() => server.stop())

/** A sign-in POST whose declared body then trickles one byte every `everyMs`. */
const trickledForm = (body: string, everyMs: number, connection: 'keep-alive' | 'close') =>
  trickleRequest(
    port,
    `POST /console/sign-in HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nOrigin: ${server.url}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\nConnection: ${connection}\r\n\r\n`,
    body,
    everyMs,
  )

test('a form that does not arrive within HTTP_BODY_TIMEOUT_MS is 408 and the connection closes', async () => {
  // About 14 s in all; the budget is 0.3 s. The bound below sits between the two with room
  // for a busy machine.
  const slow = trickledForm('email=a%40example.com&password=' + 'x'.repeat(40), 200, 'keep-alive')
  const startedAt = performance.now()
  // Someone else is served while the slow form holds its request open.
  expect((await ConsoleClient.for(server).get('/console/sign-in')).status).toBe(200)
  // The server closes the connection itself: the request did not ask for Connection: close.
  await slow.done
  expect(performance.now() - startedAt).toBeLessThan(8_000)
  const [head = '', page = ''] = slow.text().split('\r\n\r\n')
  expect(head).toStartWith('HTTP/1.1 408')
  expect(head.toLowerCase()).toContain('connection: close')
  expect(page).toContain('did not arrive in time')
  expect(server.logs.filter((entry) => entry.level === 'error')).toEqual([])
})

test('a form trickled within the budget is read as usual', async () => {
  const steady = trickledForm('email=a%40example.com&password=x', 2, 'close')
  await steady.done
  // No CSRF token was sent: the router got the whole form and refused it at the CSRF check.
  expect(steady.text()).toStartWith('HTTP/1.1 403')
})
