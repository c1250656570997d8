/** The out-of-the-box configuration (RECEIVING_DOMAIN=localhost) works end to end. */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { sendMail, simpleMessage } from '../support/smtp.ts'

let server: TestServer
beforeAll(async () => {
  server = await startTestServer({ env: { RECEIVING_DOMAIN: 'localhost' } })
})
afterAll(() => server.stop())

test('an inbox @localhost is created and receives mail', async () => {
  const tenant = server.tenant()
  const created = await server.post('/v1/inboxes', tenant.key)
  expect(created.status).toBe(201)
  expect(created.body.data.address).toMatch(/^[a-z]+-[a-z]+-[0-9a-f]{16}@localhost$/)
  const sent = await sendMail(server.app.smtpPort, { to: [created.body.data.address] }, simpleMessage({ to: created.body.data.address }))
  expect(sent.data!.code).toBe(250)
  const listed = await server.get(`/v1/inboxes/${created.body.data.id}/messages`, tenant.key)
  expect(listed.body.data[0].to).toBe(created.body.data.address)
})
