/**
 * A Host of one to three characters without a port (`http://api/` between compose services)
 * is routed like any other: Elysia's path lookup assumes a longer origin, so the app hands it
 * a stand-in URL. What a client sees (bodies, CORS, status) and what the log says stay as
 * they are for a long Host.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { until } from '../support/wait.ts'
import { rawHttp, type RawResponse } from '../support/raw-http.ts'

let server: TestServer
let key: string
let port: number
beforeAll(async () => {
  server = await startTestServer({ env: { CORS_CONSOLE_ORIGIN: 'http://localhost:3000' } })
  key = (await server.tenant()).key
  port = Number(new URL(server.url).port)
})
afterAll(() => server.stop())

const send = (
  host: string,
  method: string,
  target: string,
  extra: Record<string, string> = {},
  body = '',
): Promise<RawResponse> => {
  const headers = {
    Host: host,
    Authorization: `Bearer ${key}`,
    'Content-Type': 'application/json',
    'Content-Length': String(body.length),
    Connection: 'close',
    ...extra,
  }
  return rawHttp(
    port,
    `${method} ${target} HTTP/1.1\r\n${Object.entries(headers)
      .map(([name, value]) => `${name}: ${value}`)
      .join('\r\n')}\r\n\r\n${body}`,
  )
}

test.each(['api', 'db', 'x'])('Host: %s reaches every kind of route', async (host) => {
  expect((await send(host, 'GET', '/health')).status).toBe(200)
  expect((await send(host, 'GET', '/v1/usage')).status).toBe(200)
  const created = await send(host, 'POST', '/v1/inboxes', {}, JSON.stringify({ prefix: `short-${host}` }))
  expect(created.status).toBe(201)
  const inbox = JSON.parse(created.body).data
  expect(inbox.address).toStartWith(`short-${host}@`)
  const listed = await send(host, 'GET', '/v1/inboxes?limit=100')
  expect(listed.status).toBe(200)
  expect(JSON.parse(listed.body).data.map((item: { id: string }) => item.id)).toContain(inbox.id)
  expect((await send(host, 'GET', `/v1/inboxes/${inbox.id}/messages`)).status).toBe(200)
  expect((await send(host, 'DELETE', `/v1/inboxes/${inbox.id}`)).status).toBe(204)
  // An unknown route is still the usual 404, and nothing in any answer names the stand-in URL.
  const missing = await send(host, 'GET', '/v1/nowhere')
  expect(missing.status).toBe(404)
  for (const response of [created, listed, missing]) expect(response.raw).not.toContain('.invalid')
})

test('Host: api gets the same CORS grant and the same log line as a long Host', async () => {
  const short = await send('api', 'GET', '/v1/usage', { Origin: 'http://localhost:3000' })
  const long = await send('api.example.com', 'GET', '/v1/usage', { Origin: 'http://localhost:3000' })
  expect(short.headers['access-control-allow-origin']).toBe('http://localhost:3000')
  expect(short.headers['access-control-allow-origin']).toBe(long.headers['access-control-allow-origin']!)
  const logged = (response: RawResponse) =>
    server.logs.find((line) => line.event === 'http_request' && line.request_id === response.headers['x-request-id'])
  // The line is written after the response has gone out.
  await until(() => Boolean(logged(short) && logged(long)), 'both http_request lines')
  const [shortLine, longLine] = [logged(short), logged(long)]
  expect(shortLine).toMatchObject({ method: 'GET', path: '/v1/usage', status: 200 })
  const { request_id: _a, duration_ms: _b, time: _c, ...shortRest } = shortLine!
  const { request_id: _d, duration_ms: _e, time: _f, ...longRest } = longLine!
  expect(shortRest).toEqual(longRest)
})
