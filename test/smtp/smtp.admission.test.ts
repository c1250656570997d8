/**
 * Fair admission: one client address holds at most SMTP_MAX_CLIENTS_PER_ADDRESS connections,
 * refused at accept time, so a sender on another address always gets in; MAIL and RCPT
 * parameters of extensions we do not offer get 555; a SIZE= declaration over the limit
 * gets our own wording; behind a proxy, the address of its PROXY header is the one counted.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { connect } from 'node:net'
import { describeForBackends, startTestServer, type TestServer, type Tenant } from '../support/harness.ts'
import { SmtpClient, sendMail, simpleMessage } from '../support/smtp.ts'
import { until } from '../support/wait.ts'

const FLOODER = '127.0.0.2'
const LEGIT = '127.0.0.3'
let server: TestServer
let tenant: Tenant
let inbox: { id: string; address: string }

describeForBackends(
  ['sqlite', 'postgres'],
  "admission per client address is counted per machine by design, and its clients connect from chosen loopback addresses, which the pair's proxy replaces with its own",
  'fair SMTP admission per client address',
  () => {
    beforeAll(async () => {
      server = await startTestServer({
        env: {
          SMTP_MAX_CLIENTS: '12',
          SMTP_MAX_CLIENTS_PER_ADDRESS: '4',
          LIMIT_MONTHLY_EMAILS: '1000',
          LIMIT_INBOX_BURST: '1000',
          LIMIT_ORG_BURST: '1000',
        },
      })
      tenant = await server.tenant()
      inbox = (await server.post('/v1/inboxes', tenant.key)).body.data
    })
    afterAll(() => server.stop())

    const port = () => server.app.smtpPort
    const stored = async () =>
      (await server.get(`/v1/inboxes/${inbox.id}/messages?limit=100`, tenant.key)).body.data as Array<{
        subject: string
      }>

    async function legitimateSend(subject: string) {
      const result = await sendMail(
        port(),
        { to: [inbox.address] },
        simpleMessage({ to: inbox.address, subject }),
        LEGIT,
      )
      expect(result.data?.code).toBe(250)
      expect((await stored()).map((m) => m.subject)).toContain(subject)
    }

    describe('connections per client address', () => {
      test('the connection past the cap gets 421 at once; another address is served; a closed one frees its slot', async () => {
        const held = await Promise.all(
          Array.from({ length: 4 }, () => SmtpClient.connect(port(), '127.0.0.1', FLOODER)),
        )
        const refused = await SmtpClient.open(port(), FLOODER)
        expect(refused.greeting).toEqual({ code: 421, text: 'Too many connections from your address, try again later' })
        await refused.client.closed()
        await legitimateSend('while one address is at its cap')

        held[0]!.destroy()
        // The slot is free once the server saw the close; reconnect until then (promptly).
        let again: Awaited<ReturnType<typeof SmtpClient.open>> | undefined
        const greeted = async () => {
          again = await SmtpClient.open(port(), FLOODER)
          if (again.greeting.code === 220) return true
          await again.client.closed()
          return false
        }
        await until(greeted, 'a new connection from the address to be greeted', { timeoutMs: 2_000 })
        expect(again!.greeting.code).toBe(220)
        for (const client of [...held.slice(1), again!.client]) client.destroy()
      })

      test('one address holding its connections with a byte a second, and reconnecting in a loop, never locks out another address', async () => {
        const flooder = '127.0.0.4'
        const held = await Promise.all(
          Array.from({ length: 4 }, () => SmtpClient.connect(port(), '127.0.0.1', flooder)),
        )
        const trickle = setInterval(() => {
          for (const client of held) client.socket.write('N')
        }, 20)
        let flooding = true
        let refusedCount = 0
        const loop = (async () => {
          while (flooding) {
            const attempt = await SmtpClient.open(port(), flooder)
            if (attempt.greeting.code === 421) refusedCount++
            attempt.client.destroy()
          }
        })()
        try {
          for (let i = 0; i < 5; i++) await legitimateSend(`legitimate during the flood ${i}`)
        } finally {
          flooding = false
          clearInterval(trickle)
          await loop
          for (const client of held) client.destroy()
        }
        expect(refusedCount).toBeGreaterThan(0)
        expect((await server.get('/health')).status).toBe(200)
      })
    })

    describe('MAIL and RCPT parameters', () => {
      test('parameters of extensions we do not offer get 555 (RFC 5321 §4.1.1.11); SIZE, BODY and SMTPUTF8 are accepted', async () => {
        const client = await SmtpClient.connect(port(), '127.0.0.1', LEGIT)
        await client.command('EHLO test')
        expect(await client.command('MAIL FROM:<a@example.com> FOO=BAR')).toEqual({
          code: 555,
          text: 'MAIL FROM/RCPT TO parameter not recognized',
        })
        expect((await client.command('MAIL FROM:<a@example.com> RET=FULL')).code).toBe(555) // DSN is not offered
        expect((await client.command('MAIL FROM:<a@example.com> SIZE=100 BODY=8BITMIME SMTPUTF8')).code).toBe(250)
        expect((await client.command(`RCPT TO:<${inbox.address}> NOTIFY=NEVER`)).code).toBe(555)
        expect((await client.command(`RCPT TO:<${inbox.address}> XYZ`)).code).toBe(555)
        expect((await client.command(`RCPT TO:<${inbox.address}>`)).code).toBe(250)
        expect((await client.data(simpleMessage({ to: inbox.address, subject: 'after 555s' }))).code).toBe(250)
        await client.quit()
      })

      test('a SIZE declaration over the limit is refused in our words, and SIZE is still advertised', async () => {
        const client = await SmtpClient.connect(port(), '127.0.0.1', LEGIT)
        expect((await client.command('EHLO test')).text).toContain(`SIZE ${10 * 1024 * 1024}`)
        const reply = await client.command(`MAIL FROM:<a@example.com> SIZE=${10 * 1024 * 1024 + 1}`)
        expect(reply).toEqual({
          code: 552,
          text: `Message size exceeds fixed maximum message size (at most ${10 * 1024 * 1024} bytes)`,
        })
        expect((await client.command(`MAIL FROM:<a@example.com> SIZE=${10 * 1024 * 1024}`)).code).toBe(250)
        await client.quit()
      })
    })

    describe('behind a proxy (SMTP_PROXY_PROTOCOL=on)', () => {
      test('the address of the PROXY header is the one counted', async () => {
        // The test's proxy is loopback (TRUSTED_PROXIES: the PROXY line is believed from it only; smtp.proxy-trust.test.ts).
        const proxied = await startTestServer({
          env: { SMTP_PROXY_PROTOCOL: 'on', TRUSTED_PROXIES: '127.0.0.1', SMTP_MAX_CLIENTS_PER_ADDRESS: '1' },
        })
        try {
          const open = async (client: string) => {
            const socket = connect(proxied.app.smtpPort, '127.0.0.1')
            await new Promise((resolve) => socket.once('connect', resolve))
            socket.write(`PROXY TCP4 ${client} 127.0.0.1 40000 25\r\n`)
            const first = await new Promise<string>((resolve) => socket.once('data', (chunk) => resolve(String(chunk))))
            return { socket, first: first.slice(0, 3) }
          }
          const a = await open('198.51.100.7')
          const again = await open('198.51.100.7')
          const b = await open('203.0.113.9')
          expect([a.first, again.first, b.first]).toEqual(['220', '421', '220'])
          for (const { socket } of [a, again, b]) socket.destroy()
        } finally {
          await proxied.stop()
        }
      })
    })

    describe('guard refusals in the metrics', () => {
      test('a guard refusal is counted by reason in pigeonhole_messages_refused_total', async () => {
        const refused = server.app.metrics.messagesRefused
        const before = refused.get({ reason: 'unknown_parameter' })
        const client = await SmtpClient.connect(port(), '127.0.0.1', LEGIT)
        await client.command('EHLO test')
        expect((await client.command('MAIL FROM:<a@example.com> FOO=BAR')).code).toBe(555)
        await client.quit()
        expect(refused.get({ reason: 'unknown_parameter' })).toBe(before + 1)
      })
    })
  },
)
