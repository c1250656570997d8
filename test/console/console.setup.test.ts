/** First run: the one-time /setup link, what it creates, and that it is gone afterwards. */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { ConsoleClient, PASSWORD, setupPath, setUp } from '../support/console-client.ts'

let server: TestServer
beforeAll(async () => {
  server = await startTestServer()
})
afterAll(() => server.stop())

test('start-up logs one JSON line saying setup is pending, without the token; the app reports the link on BASE_URL', () => {
  const lines = server.logs.filter((entry) => entry.event === 'console_setup_pending')
  // One per machine: each says so as it starts (the pair's two share one log list).
  expect(lines).toHaveLength(server.machines.length)
  expect(lines[0]).toMatchObject({ setup_path: '/setup', link_from: 'bun src/cli.ts setup-link' })
  expect(server.app.setupUrl).toStartWith(`${server.app.publicUrls.baseUrl}/setup?token=`)
  const token = new URL(server.app.setupUrl!).searchParams.get('token')!
  expect(JSON.stringify(server.logs)).not.toContain(token)
})

test('before setup, the sign-in page points to the setup link', async () => {
  const page = await ConsoleClient.for(server).get('/console/sign-in')
  expect(page.html).toContain('Nobody has set up this server yet')
  expect(page.html).toContain('setup-link')
})

test('/setup without the token, or with a wrong one, answers 404', async () => {
  const client = ConsoleClient.for(server)
  expect((await client.get('/setup')).status).toBe(404)
  expect((await client.get('/setup?token=' + 'A'.repeat(43))).status).toBe(404)
  expect((await client.get('/setup?token=')).status).toBe(404)
  await client.get('/console/sign-in')
  const posted = await client.post('/setup', {
    token: 'A'.repeat(43),
    email: 'x@example.com',
    password: PASSWORD,
    organization: 'X',
  })
  expect(posted.status).toBe(404)
})

test('a weak password re-shows the form with the reason and creates nothing', async () => {
  const client = ConsoleClient.for(server)
  const path = setupPath(server)
  await client.get(path)
  const token = new URL(path, 'http://x').searchParams.get('token')!
  const page = await client.post('/setup', { token, email: 'op@example.com', password: 'short', organization: 'Acme' })
  expect(page.status).toBe(400)
  expect(page.html).toContain('The password must have')
  expect((await client.get(path)).status).toBe(200)
})

test('setup creates the operator, the organisation and a working key shown once; then /setup is 404', async () => {
  const { client, key, organizationId } = await setUp(server, { preset: 'local' })
  const usage = await server.get('/v1/usage', key)
  expect(usage.status).toBe(200)
  expect(usage.body.emails.limit).toBe(1_000_000) // the "local testing" choice
  const overview = await client.get(`/console/orgs/${organizationId}`)
  expect(overview.status).toBe(200)
  expect(overview.html).toContain('Acme')
  expect(overview.html).not.toContain(key) // the secret is never shown again
  expect((await client.get(setupPath(server))).status).toBe(404)
  expect((await ConsoleClient.for(server).get(setupPath(server))).status).toBe(404)
  expect((await ConsoleClient.for(server).get('/console/sign-in')).html).not.toContain('Nobody has set up')
})
