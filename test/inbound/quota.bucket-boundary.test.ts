/**
 * A transaction admitted in one five-minute bucket and finished in the next is checked
 * again at commit against the new bucket. Its own reservation (and those of the other
 * recipients of the same message) must not count against it there: with exactly the room
 * the transaction reserved, the message is stored.
 */
import { afterEach, expect, test } from 'bun:test'
import { ManualClock } from '../../src/clock.ts'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { SmtpClient, simpleMessage } from '../support/smtp.ts'

let server: TestServer
afterEach(() => server?.stop())

async function setUp(monthlyEmails: number) {
  const clock = new ManualClock('2026-03-10T10:00:00.000Z')
  server = await startTestServer({ env: { LIMIT_MONTHLY_EMAILS: String(monthlyEmails) }, clock })
  const tenant = await server.tenant()
  const client = await SmtpClient.connect(server.app.smtpPort)
  await client.command('EHLO test')
  return { clock, tenant, client }
}
const newInbox = async (key: string) =>
  (await server.post('/v1/inboxes', key)).body.data as { id: string; address: string }
const emails = async (key: string) => (await server.get('/v1/usage', key)).body.emails

test('RCPT at 10:04:59, end of DATA at 10:05:00, one unit of the month left: stored with 250', async () => {
  const { clock, tenant, client } = await setUp(2)
  const inbox = await newInbox(tenant.key)
  expect(
    (await client.transaction({ to: [inbox.address] }, simpleMessage({ to: inbox.address, subject: 'first' }))).data!
      .code,
  ).toBe(250)
  expect(await emails(tenant.key)).toEqual({ received: 1, limit: 2, remaining: 1 })

  clock.set('2026-03-10T10:04:59.000Z')
  expect((await client.command('MAIL FROM:<a@example.com>')).code).toBe(250)
  expect((await client.command(`RCPT TO:<${inbox.address}>`)).code).toBe(250)
  clock.set('2026-03-10T10:05:00.000Z')
  const reply = await client.data(simpleMessage({ to: inbox.address, subject: 'across the boundary' }))
  expect(reply.code).toBe(250)
  expect(await emails(tenant.key)).toEqual({ received: 2, limit: 2, remaining: 0 })
  await client.quit()
})

test('two recipients of one message across the boundary, two units left: both stored', async () => {
  const { clock, tenant, client } = await setUp(2)
  const [a, b] = [await newInbox(tenant.key), await newInbox(tenant.key)]
  clock.set('2026-03-10T10:04:59.000Z')
  await client.command('MAIL FROM:<a@example.com>')
  expect((await client.command(`RCPT TO:<${a.address}>`)).code).toBe(250)
  expect((await client.command(`RCPT TO:<${b.address}>`)).code).toBe(250)
  clock.set('2026-03-10T10:05:00.000Z')
  const reply = await client.data(simpleMessage({ to: a.address }))
  expect(reply.code).toBe(250)
  expect(reply.text.match(/msg_[0-9a-f]{32}/g)).toHaveLength(2)
  expect(await emails(tenant.key)).toEqual({ received: 2, limit: 2, remaining: 0 })
  await client.quit()
})

test('the held unit keeps other senders out in the new bucket too, and its holder is stored', async () => {
  const { clock, tenant, client } = await setUp(1)
  const inbox = await newInbox(tenant.key)
  clock.set('2026-03-10T10:04:59.000Z')
  await client.command('MAIL FROM:<a@example.com>')
  expect((await client.command(`RCPT TO:<${inbox.address}>`)).code).toBe(250)
  // The held unit keeps another sender out, in the old bucket and in the new one.
  const other = await SmtpClient.connect(server.app.smtpPort)
  await other.command('EHLO other')
  clock.set('2026-03-10T10:05:00.000Z')
  expect((await other.transaction({ to: [inbox.address] }, simpleMessage({ to: inbox.address }))).rcpt[0]!.code).toBe(
    550,
  )
  await other.quit()
  expect((await client.data(simpleMessage({ to: inbox.address }))).code).toBe(250)
  expect(await emails(tenant.key)).toEqual({ received: 1, limit: 1, remaining: 0 })
  await client.quit()
})
