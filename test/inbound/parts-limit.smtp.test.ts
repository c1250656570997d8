/**
 * LIMIT_MESSAGE_PARTS: lines that can delimit a MIME part (starting with `--`) are counted
 * before parsing. Past the limit the message is refused with 552 without a parse worker
 * ever seeing it, nothing is stored or counted; at the limit it is stored. A message nested
 * in a base64 body hides its lines and parts from that count: they are counted once
 * decoded, before the nested message is parsed, against LIMIT_MESSAGE_PARTS and
 * LIMIT_MESSAGE_LINES again.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startTestServer, type TestServer, type Tenant } from '../support/harness.ts'
import { SmtpClient } from '../support/smtp.ts'

let server: TestServer
let tenant: Tenant
let inbox: { id: string; address: string }

beforeAll(async () => {
  server = await startTestServer({ env: { LIMIT_MESSAGE_PARTS: '3', LIMIT_MESSAGE_LINES: '300' } })
  tenant = await server.tenant()
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

/** A message whose only part is `inner` as a base64 message/rfc822; `padLines` header lines make it larger. */
const nesting = (inner: string, padLines = 0) =>
  [
    'From: a@example.com',
    'Subject: nested',
    ...Array.from({ length: padLines }, (_, i) => `X-Pad-${i}: ${'x'.repeat(90)}`),
    'Content-Type: message/rfc822',
    'Content-Transfer-Encoding: base64',
    '',
    Buffer.from(inner).toString('base64').replace(/.{76}/g, '$&\r\n'),
    '',
  ].join('\r\n')

// Small messages are parsed on the event loop until the nesting shows; larger ones in a worker.
for (const [size, padLines] of [
  ['small', 0],
  ['large', 100],
] as const) {
  test(`parts hidden in a nested base64 message (${size}): one over the limit is 552, nothing stored or counted; at the limit it is stored`, async () => {
    const client = await SmtpClient.connect(server.app.smtpPort)
    await client.command('EHLO parts.test')
    const over = await client.transaction({ to: [inbox.address] }, nesting(multipart(3), padLines))
    expect(over.data).toEqual({ code: 552, text: 'Message has too many MIME parts (at most 3)' })
    const before = (await server.get('/v1/usage', tenant.key)).body.emails.received
    const atLimit = await client.transaction({ to: [inbox.address] }, nesting(multipart(2), padLines))
    expect(atLimit.data?.code).toBe(250)
    const id = atLimit.data!.text.match(/msg_[0-9a-f]{32}/)![0]
    expect((await server.get(`/v1/messages/${id}`, tenant.key)).body.data.text).toContain('part 1')
    expect((await server.get('/v1/usage', tenant.key)).body.emails.received).toBe(before + 1)
    await client.quit()
  })
}

test('lines hidden in a nested base64 message count against LIMIT_MESSAGE_LINES: 552', async () => {
  const client = await SmtpClient.connect(server.app.smtpPort)
  await client.command('EHLO lines.test')
  const inner = [
    'From: b@example.com',
    'Subject: inner',
    '',
    ...Array.from({ length: 400 }, (_, i) => `line ${i}`),
    '',
  ].join('\r\n')
  const outer = nesting(inner)
  expect(outer.split('\n').length).toBeLessThan(300)
  const result = await client.transaction({ to: [inbox.address] }, outer)
  expect(result.data).toEqual({ code: 552, text: 'Message has too many lines (at most 300)' })
  await client.quit()
})
