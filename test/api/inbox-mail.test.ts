/**
 * The inbox operations' rules that involve received mail: getUsage counts it by UTC month,
 * deleteInbox removes its messages but not the month's count, and an inbox's messages are
 * as private as the inbox. Mail arrives over real SMTP.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ManualClock } from '../../src/clock.ts'
import { startTestServer, type ApiResponse, type TestServer } from '../support/harness.ts'
import { sendMail, simpleMessage } from '../support/smtp.ts'
import { expectError } from '../support/shapes.ts'

let server: TestServer
const clock = new ManualClock(Date.parse('2026-01-31T23:59:59.000Z'))
beforeAll(async () => {
  server = await startTestServer({ clock })
})
afterAll(() => server.stop())

async function deliver(address: string, subject = 'Hello'): Promise<void> {
  const result = await sendMail(server.app.smtpPort, { to: [address] }, simpleMessage({ to: address, subject }))
  expect(result.data?.code).toBe(250)
}

const usage = async (key: string) => (await server.get('/v1/usage', key)).body

test('emails.received counts accepted mail in the UTC month it arrived', async () => {
  clock.set('2026-01-31T23:59:59.999Z')
  const { key } = server.tenant()
  const { address } = (await server.post('/v1/inboxes', key)).body.data
  await deliver(address)
  await deliver(address)
  expect((await usage(key)).emails).toEqual({ received: 2, limit: 33, remaining: 31 })

  clock.set('2026-02-01T00:00:00.000Z')
  expect((await usage(key)).emails).toEqual({ received: 0, limit: 33, remaining: 33 })
  await deliver(address)
  expect((await usage(key)).emails).toEqual({ received: 1, limit: 33, remaining: 32 })
  expect((await usage(key)).period).toEqual({ starts_at: '2026-02-01T00:00:00.000Z', ends_at: '2026-03-01T00:00:00.000Z' })
})

test('deleteInbox removes its messages but does not restore the monthly email quota', async () => {
  clock.set('2026-03-10T10:00:00.000Z')
  const { key } = server.tenant()
  const { id, address } = (await server.post('/v1/inboxes', key)).body.data
  await deliver(address, 'to be deleted')
  const listed = await server.get(`/v1/inboxes/${id}/messages`, key)
  expect(listed.body.data.length).toBe(1)
  const messageId = listed.body.data[0].id

  expect((await server.delete(`/v1/inboxes/${id}`, key)).status).toBe(204)
  expectError(await server.get(`/v1/messages/${messageId}`, key), 404, 'message_not_found')
  expectError(await server.get(`/v1/inboxes/${id}/messages`, key), 404, 'inbox_not_found')
  const after = await usage(key)
  expect(after.emails).toEqual({ received: 1, limit: 33, remaining: 32 })
  expect(after.inboxes.active).toBe(0)
  // Mail to the deleted address is refused at RCPT time.
  const refused = await sendMail(server.app.smtpPort, { to: [address] }, simpleMessage({ to: address }))
  expect(refused.rcpt[0]!.code).toBeGreaterThanOrEqual(500)
  expect(refused.rcpt[0]!.text).toContain('Recipient address rejected')
})

describe('another organisation’s inbox id on the message listing answers like an unknown id', () => {
  const fingerprint = (r: ApiResponse) => ({ status: r.status, code: r.body?.error?.code, message: r.body?.error?.message })

  test('listOrWaitForMessages, also with wait_seconds', async () => {
    clock.set('2026-03-11T10:00:00.000Z')
    const owner = server.tenant()
    const stranger = server.tenant()
    const { id, address } = (await server.post('/v1/inboxes', owner.key)).body.data
    await deliver(address)
    const unknown = `inbox_${'0'.repeat(32)}`
    for (const query of ['', '?wait_seconds=1', '?limit=1&include=content']) {
      const foreign = await server.get(`/v1/inboxes/${id}/messages${query}`, stranger.key)
      const missing = await server.get(`/v1/inboxes/${unknown}/messages${query}`, stranger.key)
      expectError(foreign, 404, 'inbox_not_found')
      expect(fingerprint(foreign)).toEqual(fingerprint(missing))
    }
    expect((await server.get(`/v1/inboxes/${id}/messages`, owner.key)).body.data.length).toBe(1)
  })
})
