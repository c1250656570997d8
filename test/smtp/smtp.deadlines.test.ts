/**
 * Session deadlines: a client that never says EHLO, trickles a command, sends NOOP after
 * NOOP, drip-feeds DATA or stays past the session lifetime gets 421 and is disconnected;
 * what it had in flight is not stored and costs no quota. Each client keeps bytes flowing
 * faster than smtp-server's idle timeout (the command time), so each test proves a deadline,
 * not the idle timer. The tests wait out real deadlines, so they run at the same time, each
 * with an organisation and inbox of its own.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestServer, type TestServer, type Tenant } from '../support/harness.ts'
import { SmtpClient, simpleMessage, trickle } from '../support/smtp.ts'

let server: TestServer

beforeAll(async () => {
  server = await startTestServer({
    env: {
      SMTP_GREETING_TIMEOUT_MS: '300',
      SMTP_COMMAND_TIMEOUT_MS: '1000',
      SMTP_DATA_TIMEOUT_MS: '1500',
      SMTP_SESSION_TIMEOUT_MS: '3000',
    },
  })
})
afterAll(() => server.stop())

const port = () => server.app.smtpPort

/** An organisation of the test's own, with one inbox, so tests running at once do not see each other's mail. */
async function ownInbox(name: string): Promise<{ tenant: Tenant; inbox: { id: string; address: string } }> {
  const tenant = await server.tenant(name)
  return { tenant, inbox: (await server.post('/v1/inboxes', tenant.key)).body.data }
}
const received = async (tenant: Tenant) => (await server.get('/v1/usage', tenant.key)).body.emails.received as number

describe.concurrent('deadlines', () => {
  test('no EHLO/HELO within the greeting time: 421, even while bytes keep arriving', async () => {
    const client = await SmtpClient.connect(port())
    const stop = trickle(client, 'EHLO slowly.example.com')
    const reply = await client.next()
    stop()
    expect(reply).toEqual({ code: 421, text: 'Timeout waiting for EHLO/HELO, closing connection' })
    await client.closed()
  })

  test('NOOP after NOOP is no progress: 421 after the command time', async () => {
    const client = await SmtpClient.connect(port())
    await client.command('EHLO test')
    const started = performance.now()
    let reply = await client.command('NOOP')
    while (reply.code === 250) {
      await Bun.sleep(50) // the scenario: a client pacing its NOOPs, never silent for long
      reply = await client.command('NOOP')
    }
    expect(reply).toEqual({ code: 421, text: 'Timeout waiting for the next command, closing connection' })
    expect(performance.now() - started).toBeLessThan(5_000)
    await client.closed()
  })

  test('DATA drip-fed past the DATA time: 421, nothing stored, quota untouched', async () => {
    const { tenant, inbox } = await ownInbox('drip-fed')
    const before = await received(tenant)
    const client = await SmtpClient.connect(port())
    await client.command('EHLO test')
    await client.command('MAIL FROM:<a@example.com>')
    expect((await client.command(`RCPT TO:<${inbox.address}>`)).code).toBe(250)
    expect((await client.command('DATA')).code).toBe(354)
    const stop = trickle(client, simpleMessage({ to: inbox.address }))
    const reply = await client.next()
    stop()
    expect(reply).toEqual({ code: 421, text: 'Message data took too long, closing connection' })
    await client.closed()
    expect(await received(tenant)).toBe(before)
    expect((await server.get(`/v1/inboxes/${inbox.id}/messages`, tenant.key)).body.data).toEqual([])
  })

  test('the session lifetime lets a message in progress finish, then 421', async () => {
    const { inbox } = await ownInbox('outlived')
    const client = await SmtpClient.connect(port())
    const opened = performance.now()
    await client.command('EHLO test')
    // Real progress (MAIL, RCPT) keeps the command deadline away until DATA starts near the end of the lifetime.
    while (performance.now() - opened < 2_400) {
      await client.command('RSET')
      expect((await client.command('MAIL FROM:<a@example.com>')).code).toBe(250)
      expect((await client.command(`RCPT TO:<${inbox.address}>`)).code).toBe(250)
      await Bun.sleep(50) // the scenario: a client pacing real progress until near the end of the lifetime
    }
    expect((await client.command('DATA')).code).toBe(354)
    client.socket.write(simpleMessage({ to: inbox.address, subject: 'outlived the session' }) + '\r\n')
    while (performance.now() - opened < 3_100) {
      await Bun.sleep(100) // the scenario: a slow sender of DATA past the lifetime
      client.socket.write('more text\r\n') // never silent for the idle timeout
    }
    client.socket.write('.\r\n')
    expect((await client.next()).text).toStartWith('Message stored as')
    expect(await client.next()).toEqual({ code: 421, text: 'Session time limit reached, closing connection' })
    await client.closed()
  }, 10_000)
})
