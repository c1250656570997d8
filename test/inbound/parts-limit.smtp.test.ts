/**
 * LIMIT_MESSAGE_PARTS: lines that can delimit a MIME part (starting with `--`) are counted
 * before parsing. Past the limit the message is refused with 552 without a parse worker
 * ever seeing it, nothing is stored or counted; at the limit it is stored.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startTestServer, type TestServer, type Tenant } from '../support/harness.ts'
import { SmtpClient } from '../support/smtp.ts'

let server: TestServer
let tenant: Tenant
let inbox: { id: string; address: string }

beforeAll(async () => {
  server = await startTestServer({ env: { LIMIT_MESSAGE_PARTS: '3' } })
  tenant = server.tenant()
  inbox = (await server.post('/v1/inboxes', tenant.key)).body.data
})
afterAll(() => server.stop())

/** A multipart message with `parts` text parts: parts + 1 delimiter lines. */
const multipart = (parts: number) =>
  [
    'From: a@example.com',
    'Subject: parts',
    'Content-Type: multipart/mixed; boundary="b"',
    '',
    ...Array.from({ length: parts }, (_, i) => `--b\r\nContent-Type: text/plain\r\n\r\npart ${i}`),
    '--b--',
    '',
  ].join('\r\n')

test('one delimiter line over the limit: 552, refused before any parsing, nothing stored or counted', async () => {
  const client = await SmtpClient.connect(server.app.smtpPort)
  await client.command('EHLO parts.test')
  const result = await client.transaction({ to: [inbox.address] }, multipart(3))
  expect(result.data).toEqual({ code: 552, text: 'Message has too many MIME parts (at most 3)' })
  expect(server.app.services.parser.workers).toBe(0)
  expect((await server.get('/v1/usage', tenant.key)).body.emails.received).toBe(0)
  await client.quit()
})

test('at the limit: stored', async () => {
  const client = await SmtpClient.connect(server.app.smtpPort)
  await client.command('EHLO parts.test')
  const result = await client.transaction({ to: [inbox.address] }, multipart(2))
  expect(result.data?.code).toBe(250)
  const id = result.data!.text.match(/msg_[0-9a-f]{32}/)![0]
  expect((await server.get(`/v1/messages/${id}`, tenant.key)).body.data.text).toContain('part 1')
  await client.quit()
})
