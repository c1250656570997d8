/**
 * PARSE_TIMEOUT_MS over SMTP: a message whose parse outlasts the budget is refused with
 * 554, its quota reservation is released, nothing is stored, and the next message is
 * parsed by a fresh worker as usual.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startTestServer, type TestServer, type Tenant } from '../support/harness.ts'
import { SmtpClient, simpleMessage } from '../support/smtp.ts'

let server: TestServer
let tenant: Tenant
let inbox: { id: string; address: string }

beforeAll(async () => {
  // One unit a month: the second message is accepted only if the refused one released its unit.
  server = await startTestServer({
    env: { PARSE_TIMEOUT_MS: '75', LIMIT_MONTHLY_EMAILS: '1', LIMIT_HEADER_BYTES: String(2 * 1024 * 1024) },
  })
  tenant = await server.tenant()
  inbox = (await server.post('/v1/inboxes', tenant.key)).body.data
})
afterAll(() => server.stop())

/** 290,000 header lines (under the line limit): about 0.4 s of parsing here, several times 75 ms anywhere. */
const manyHeaders = (to: string) =>
  [
    `From: a@example.com`,
    `To: ${to}`,
    'Subject: slow',
    ...Array.from({ length: 290_000 }, () => 'X: y'),
    '',
    'body',
    '',
  ].join('\r\n')

test('a parse over the budget: 554, nothing stored or counted; the next message is stored', async () => {
  const client = await SmtpClient.connect(server.app.smtpPort)
  await client.command('EHLO budget.test')
  const slow = await client.transaction({ to: [inbox.address] }, manyHeaders(inbox.address))
  expect(slow.data).toEqual({ code: 554, text: 'Message could not be parsed in time (over 75 ms)' })
  expect((await server.get('/v1/usage', tenant.key)).body.emails.received).toBe(0)
  expect(server.logs.filter((line) => line.event === 'parse_timeout')).toHaveLength(1)

  const normal = await client.transaction(
    { to: [inbox.address] },
    simpleMessage({ to: inbox.address, subject: 'after the slow one' }),
  )
  expect(normal.data?.code).toBe(250)
  const listed = (await server.get(`/v1/inboxes/${inbox.id}/messages`, tenant.key)).body.data
  expect(listed.map((m: { subject: string }) => m.subject)).toEqual(['after the slow one'])
  await client.quit()
}, 30_000)
