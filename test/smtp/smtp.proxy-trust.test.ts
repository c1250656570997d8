/**
 * SMTP_PROXY_PROTOCOL=on believes a PROXY line only from TRUSTED_PROXIES: any other peer is
 * counted, greeted and timed by its own address, and its PROXY line is refused; a trusted
 * proxy that sends no line is cut at the greeting deadline, not smtp-server's idle minute.
 * The proxy here is 127.0.0.9; the other peers are other 127.x addresses (Linux loopback).
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { connect } from 'node:net'
import { describeForBackends, startTestServer, type TestServer, type Tenant } from '../support/harness.ts'
import { SmtpClient, simpleMessage } from '../support/smtp.ts'

const PROXY = '127.0.0.9'
const proxyLine = (client: string) => `PROXY TCP4 ${client} 127.0.0.1 40000 25\r\n`
const TOO_MANY = { code: 421, text: 'Too many connections from your address, try again later' }
const REFUSED_HEADER = { code: 421, text: 'PROXY header not accepted from your address, closing connection' }

let server: TestServer
let tenant: Tenant
let inbox: { id: string; address: string }

describeForBackends(
  ['sqlite', 'postgres'],
  "its clients connect from chosen loopback addresses, which the pair's proxy replaces with its own, and per-address admission is counted per machine",
  'PROXY lines believed only from TRUSTED_PROXIES',
  () => {
    beforeAll(async () => {
      server = await startTestServer({
        env: {
          SMTP_PROXY_PROTOCOL: 'on',
          TRUSTED_PROXIES: `${PROXY}/32, fd00::/8`,
          SMTP_MAX_CLIENTS: '40',
          SMTP_MAX_CLIENTS_PER_ADDRESS: '5',
          SMTP_GREETING_TIMEOUT_MS: '400',
          LIMIT_INBOX_BURST: '1000',
          LIMIT_ORG_BURST: '1000',
        },
      })
      tenant = await server.tenant()
      inbox = (await server.post('/v1/inboxes', tenant.key)).body.data
    })
    afterAll(() => server.stop())

    const port = () => server.app.smtpPort

    /** A whole transaction through the proxy on behalf of `client`; answers the reply to the message. */
    async function sendThroughProxy(client: string, subject: string) {
      const { client: smtp, greeting } = await SmtpClient.open(port(), PROXY, '127.0.0.1', proxyLine(client))
      expect(greeting.code).toBe(220)
      expect((await smtp.command('EHLO sender.example')).code).toBe(250)
      expect((await smtp.command('MAIL FROM:<a@sender.example>')).code).toBe(250)
      expect((await smtp.command(`RCPT TO:<${inbox.address}>`)).code).toBe(250)
      const reply = await smtp.data(simpleMessage({ to: inbox.address, subject }))
      await smtp.command('QUIT')
      return reply
    }

    test("a trusted proxy's PROXY line names the client that the guards count", async () => {
      const held = await Promise.all(
        Array.from({ length: 5 }, () => SmtpClient.open(port(), PROXY, '127.0.0.1', proxyLine('203.0.113.7'))),
      )
      try {
        expect(held.map(({ greeting }) => greeting.code)).toEqual([220, 220, 220, 220, 220])
        const sixth = await SmtpClient.open(port(), PROXY, '127.0.0.1', proxyLine('203.0.113.7'))
        expect(sixth.greeting).toEqual(TOO_MANY)
        expect(
          server.logs.some((line) => line.reason === 'too_many_connections' && line.remote === '203.0.113.7'),
        ).toBe(true)
        // The proxy's own address holds nothing: another client through it is served.
        expect((await sendThroughProxy('203.0.113.8', 'through the proxy')).code).toBe(250)
      } finally {
        for (const { client } of held) client.destroy()
      }
    })

    test('a peer outside TRUSTED_PROXIES is held to its own per-address limit, whatever address its PROXY line claims', async () => {
      const attacker = '127.0.0.5'
      // Five plain sessions: greeted at once and counted as the attacker's own address.
      const held = await Promise.all(Array.from({ length: 5 }, () => SmtpClient.connect(port(), '127.0.0.1', attacker)))
      try {
        for (let i = 0; i < 3; i++) {
          const { client, greeting } = await SmtpClient.open(
            port(),
            attacker,
            '127.0.0.1',
            proxyLine(`198.51.100.${i + 1}`),
          )
          expect(greeting).toEqual(TOO_MANY)
          await client.closed()
        }
      } finally {
        for (const client of held) client.destroy()
      }
    })

    test('a PROXY line from a peer outside TRUSTED_PROXIES is answered 421 and its address never used', async () => {
      const attacker = '127.0.0.6'
      const transcripts = await Promise.all(
        Array.from({ length: 8 }, async (_, i) => {
          const { client, greeting } = await SmtpClient.open(
            port(),
            attacker,
            '127.0.0.1',
            proxyLine(`198.51.100.${10 + i}`),
          )
          const replies = [greeting]
          // Believed, the line would have opened a session here, and EHLO would get its 250.
          if (greeting.code === 220) replies.push(await client.command('EHLO attacker.example'))
          await client.closed()
          return replies
        }),
      )
      // Over the limit at once; or greeted as itself and refused for the line; or, when the line
      // beat the greeting, refused as an early talker. Never a session under a claimed address.
      const outcomes = [
        [TOO_MANY],
        [expect.objectContaining({ code: 220 }), REFUSED_HEADER],
        [{ code: 421, text: 'inbox.test You talk too soon' }],
      ]
      for (const replies of transcripts) expect(outcomes).toContainEqual(replies)
      const claimed = server.logs.filter((line) => String(line.remote ?? '').startsWith('198.51.100.'))
      expect(claimed).toEqual([])
      expect(
        server.logs.filter((line) => line.reason === 'proxy_header_refused').every((line) => line.remote === attacker),
      ).toBe(true)
    })

    test('a client behind the proxy cannot send a second PROXY line', async () => {
      const { client, greeting } = await SmtpClient.open(port(), PROXY, '127.0.0.1', proxyLine('203.0.113.8'))
      expect(greeting.code).toBe(220)
      expect(await client.command(proxyLine('198.51.100.99').trimEnd())).toEqual(REFUSED_HEADER)
      await client.closed()
    })

    test('forty silent sockets from one peer neither lock out the proxy nor outlive the greeting deadline', async () => {
      const silent = '127.0.0.7'
      const opened = await Promise.all(Array.from({ length: 40 }, () => SmtpClient.open(port(), silent)))
      const greeted = opened.filter(({ greeting }) => greeting.code === 220)
      expect(greeted.length).toBe(5)
      expect(
        opened.filter(({ greeting }) => greeting.code === 421).every(({ greeting }) => greeting.text === TOO_MANY.text),
      ).toBe(true)
      // Another sender, through the proxy, while the five wait out their greeting deadline.
      expect((await sendThroughProxy('203.0.113.9', 'while forty sockets sat silent')).code).toBe(250)
      for (const { client } of greeted) {
        expect(await client.next()).toEqual({ code: 421, text: 'Timeout waiting for EHLO/HELO, closing connection' })
        await client.closed()
      }
      for (const { client } of opened) client.destroy()
    })

    test('a trusted proxy that never sends its PROXY line is cut at the greeting deadline', async () => {
      const started = performance.now()
      const socket = connect({ port: port(), host: '127.0.0.1', localAddress: PROXY })
      socket.on('error', () => {})
      let received = ''
      socket.on('data', (chunk) => {
        received += String(chunk)
      })
      await new Promise((resolve) => socket.once('close', resolve))
      // The idle timeout (SMTP_COMMAND_TIMEOUT_MS, a minute here) would have held it far longer.
      expect(performance.now() - started).toBeLessThan(10_000)
      expect(received).toBe('') // nothing is said before the proxy has spoken
      expect(server.logs.some((line) => line.reason === 'proxy_header_timeout' && line.remote === PROXY)).toBe(true)
    }, 15_000)
  },
)
