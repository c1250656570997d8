/** getHealth (spec getHealth, Resources: Health payload): no key, a fixed payload. */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startTestServer, type TestServer } from '../support/harness.ts'

let server: TestServer
beforeAll(async () => {
  server = await startTestServer()
})
afterAll(() => server.stop())

test('getHealth: exactly { status: "ok", service: "pigeonhole" }', async () => {
  const response = await server.get('/health')
  expect(response.status).toBe(200)
  expect(response.body).toEqual({ status: 'ok', service: 'pigeonhole' })
  expect(response.headers.get('content-type')).toContain('application/json')
})
