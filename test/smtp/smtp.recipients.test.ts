/** RCPT TO rules: which addresses are accepted, and how a message to several inboxes is stored. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestServer, type TestServer, type Tenant } from '../support/harness.ts'
import { SmtpClient, sendMail, simpleMessage } from '../support/smtp.ts'

let server: TestServer
let tenant: Tenant

beforeAll(async () => {
  server = await startTestServer({
    env: { LIMIT_INBOX_BURST: '1000', LIMIT_ORG_BURST: '1000', LIMIT_MONTHLY_EMAILS: '1000' },
  })
  tenant = await server.tenant()
})
afterAll(() => server.stop())

const newInbox = async (prefix?: string) =>
  (await server.post('/v1/inboxes', tenant.key, prefix ? { prefix } : undefined)).body.data
const messagesOf = async (inboxId: string) =>
  (await server.get(`/v1/inboxes/${inboxId}/messages`, tenant.key)).body.data as any[]
const received = async () => (await server.get('/v1/usage', tenant.key)).body.emails.received as number

describe('RCPT TO', () => {
  test('an unknown address is refused with "Recipient address rejected"', async () => {
    const result = await sendMail(server.app.smtpPort, { to: ['nobody-here@inbox.test'] }, simpleMessage({ to: 'x' }))
    expect(result.rcpt[0]!.code).toBe(550)
    expect(result.rcpt[0]!.text).toContain('Recipient address rejected')
  })

  test('an existing local part on another domain is refused', async () => {
    const inbox = await newInbox('other-domain')
    const result = await sendMail(
      server.app.smtpPort,
      { to: ['other-domain@elsewhere.test'] },
      simpleMessage({ to: 'x' }),
    )
    expect(result.rcpt[0]!.code).toBe(550)
    expect(result.rcpt[0]!.text).toContain('Recipient address rejected')
    expect(await messagesOf(inbox.id)).toHaveLength(0)
  })

  test('local part and domain match case-insensitively', async () => {
    const inbox = await newInbox('mixed-case')
    const result = await sendMail(
      server.app.smtpPort,
      { to: ['Mixed-CASE@INBOX.Test'] },
      simpleMessage({ to: inbox.address }),
    )
    expect(result.rcpt[0]!.code).toBe(250)
    expect(result.data!.code).toBe(250)
    const [message] = await messagesOf(inbox.id)
    expect(message.to).toBe('mixed-case@inbox.test')
  })

  test('a deleted inbox is refused', async () => {
    const inbox = await newInbox('soon-deleted')
    expect((await server.delete(`/v1/inboxes/${inbox.id}`, tenant.key)).status).toBe(204)
    const result = await sendMail(server.app.smtpPort, { to: [inbox.address] }, simpleMessage({ to: inbox.address }))
    expect(result.rcpt[0]!.code).toBe(550)
    expect(result.rcpt[0]!.text).toContain('Recipient address rejected')
  })

  test('an inbox deleted between RCPT and DATA gets nothing, and the message is refused', async () => {
    const inbox = await newInbox()
    const before = await received()
    const client = await SmtpClient.connect(server.app.smtpPort)
    await client.command('EHLO test')
    await client.command('MAIL FROM:<a@example.com>')
    expect((await client.command(`RCPT TO:<${inbox.address}>`)).code).toBe(250)
    await server.delete(`/v1/inboxes/${inbox.id}`, tenant.key)
    const reply = await client.data(simpleMessage({ to: inbox.address }))
    expect(reply.code).toBe(550)
    expect(reply.text).toContain('Recipient address rejected')
    await client.quit()
    expect(await received()).toBe(before)
  })

  test('one message to several inboxes is stored once per inbox and counted once per inbox', async () => {
    const [a, b] = [await newInbox(), await newInbox()]
    const before = await received()
    const result = await sendMail(
      server.app.smtpPort,
      { to: [a.address, b.address, a.address.toUpperCase(), 'missing@inbox.test'] },
      simpleMessage({ to: a.address, subject: 'fan-out' }),
    )
    expect(result.rcpt.map((r) => r.code)).toEqual([250, 250, 250, 550])
    expect(result.data!.code).toBe(250)
    const [inA, inB] = [await messagesOf(a.id), await messagesOf(b.id)]
    expect(inA).toHaveLength(1)
    expect(inB).toHaveLength(1)
    expect(inA[0].to).toBe(a.address)
    expect(inB[0].to).toBe(b.address)
    expect(inA[0].id).not.toBe(inB[0].id)
    expect(await received()).toBe(before + 2)
  })

  test('the listener is receive-only: no AUTH, SIZE advertised (STARTTLS: test/ops/ops.starttls.test.ts)', async () => {
    const client = await SmtpClient.connect(server.app.smtpPort)
    const ehlo = await client.command('EHLO test')
    expect(ehlo.code).toBe(250)
    expect(ehlo.text).not.toContain('AUTH')
    expect(ehlo.text).toContain(`SIZE ${10 * 1024 * 1024}`)
    expect((await client.command('AUTH PLAIN AGZvbwBiYXI=')).code).toBeGreaterThanOrEqual(500)
    await client.quit()
  })

  test('the 250 after DATA names the stored message ids, which the API then serves', async () => {
    const inbox = await newInbox()
    const result = await sendMail(server.app.smtpPort, { to: [inbox.address] }, simpleMessage({ to: inbox.address }))
    const id = /msg_[0-9a-f]{32}/.exec(result.data!.text)?.[0]
    expect(id).toBeDefined()
    expect((await server.get(`/v1/messages/${id}`, tenant.key)).status).toBe(200)
  })
})
