/** With an https BASE_URL (behind a TLS-terminating proxy) the session cookie is Secure. */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { ConsoleClient, PASSWORD, setupPath } from '../support/console-client.ts'
import { startTestServer, type TestServer } from '../support/harness.ts'

const BASE_URL = 'https://mail.example.test'
let server: TestServer
beforeAll(async () => {
  server = await startTestServer({ env: { BASE_URL } })
})
afterAll(() => server.stop())

test('the setup link names BASE_URL, and forms from BASE_URL set a Secure session cookie', async () => {
  expect(server.app.setupUrl).toStartWith(`${BASE_URL}/setup?token=`)
  const client = ConsoleClient.for(server)
  const path = setupPath(server)
  await client.get(path)
  const token = new URL(path, BASE_URL).searchParams.get('token')!
  // A browser on the public URL sends that origin; the proxy forwards to our port.
  const done = await client.post(
    '/setup',
    { token, email: 'op@example.com', password: PASSWORD, organization: 'Acme' },
    { origin: BASE_URL },
  )
  expect(done.status).toBe(303) // to the page that shows the first key (post/redirect/get)
  const session = done.headers.getSetCookie().find((line) => line.startsWith('ph_session='))!
  expect(session).toContain('; Secure')
  expect(session).toContain('HttpOnly')
})
