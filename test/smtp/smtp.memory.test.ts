/**
 * Bounded memory for inbound mail, with limits scaled down so the mechanism runs fast: a
 * 64 KiB message limit and a 128 KiB DATA budget (half of it per client address). An
 * over-size message gives its bytes back the moment it passes the limit, a message that
 * finds no room in memory continues in the spool and is stored, and 200 parallel over-size streams leave a legitimate sender on
 * another address untouched. The full-size measurement is bench/smtp-memory.ts.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { describeForBackends, startTestServer, type TestServer, type Tenant } from '../support/harness.ts'
import { SmtpClient, sendMail, simpleMessage } from '../support/smtp.ts'
import { until } from '../support/wait.ts'

// A hang's deadline, not a speed: on a busy machine this file's servers, processes or
// generated cases take well over Bun's default of 5 s.
setDefaultTimeout(30_000)

const KiB = 1024
const LEGIT = '127.0.0.3'
let server: TestServer
let tenant: Tenant
let inbox: { id: string; address: string }

describeForBackends(
  ['sqlite', 'postgres'],
  "the DATA memory budget, its per-address half and the spool belong to one machine by design, and its clients connect from chosen loopback addresses, which the pair's proxy replaces with its own",
  'bounded DATA memory per machine',
  () => {
    beforeAll(async () => {
      server = await startTestServer({
        env: {
          LIMIT_MESSAGE_BYTES: String(64 * KiB),
          SMTP_DATA_MEMORY_BYTES: String(128 * KiB),
          SMTP_MAX_CLIENTS: '260',
          SMTP_MAX_CLIENTS_PER_ADDRESS: '250',
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
    const message = (subject: string, bytes: number) =>
      simpleMessage({ to: inbox.address, subject, text: ('y'.repeat(78) + '\r\n').repeat(Math.ceil(bytes / 80)) })
    const subjects = async () =>
      (
        (await server.get(`/v1/inboxes/${inbox.id}/messages?limit=100`, tenant.key)).body.data as Array<{
          subject: string
        }>
      ).map((m) => m.subject)

    /** EHLO, MAIL, RCPT and DATA on a new connection from `from`, ready for the body. */
    async function inData(from: string): Promise<SmtpClient> {
      const client = await SmtpClient.connect(port(), '127.0.0.1', from)
      await client.command('EHLO test')
      await client.command('MAIL FROM:<a@example.com>')
      expect((await client.command(`RCPT TO:<${inbox.address}>`)).code).toBe(250)
      expect((await client.command('DATA')).code).toBe(354)
      return client
    }

    describe('DATA memory', () => {
      test('an over-size message gives its bytes back when it passes the limit, before its end; 552 after the final dot', async () => {
        const from = '127.0.0.20'
        const huge = await inData(from)
        huge.writeBody(message('too large', 70 * KiB))
        await until(
          () =>
            server.logs.some((l) => l.event === 'smtp_data_dropped' && l.reason === 'too_large' && l.remote === from),
          'the dropped DATA to be logged',
        )
        // The same address's half of the budget (64 KiB) is free again while the huge one is still open.
        const fits = await sendMail(
          port(),
          { to: [inbox.address] },
          message('fits while the huge one streams', 50 * KiB),
          from,
        )
        expect(fits.data?.code).toBe(250)
        huge.writeBody('\r\nstill more bytes, only counted\r\n'.repeat(1000))
        huge.socket.write('.\r\n')
        expect(await huge.next()).toEqual({
          code: 552,
          text: `Message size exceeds fixed maximum message size (at most ${64 * KiB} bytes)`,
        })
        expect(await subjects()).not.toContain('too large')
        await huge.quit()
      })

      test("what does not fit in memory goes to the spool: two messages over the address's half are both stored, the spool emptied", async () => {
        const from = '127.0.0.21'
        const spoolDir = join(dirname(server.databasePath), 'spool')
        const [first, second] = await Promise.all([inData(from), inData(from)])
        first!.writeBody(message('first of two', 40 * KiB))
        second!.writeBody(message('second of two', 40 * KiB))
        // 80 KiB from one address against its 64 KiB half: one of them is on disk now, before its end.
        await until(() => readdirSync(spoolDir).length === 1, 'a spool file')
        const other = await sendMail(
          port(),
          { to: [inbox.address] },
          message('other address, same moment', 60 * KiB),
          LEGIT,
        )
        expect(other.data?.code).toBe(250)
        first!.socket.write('\r\n.\r\n')
        second!.socket.write('\r\n.\r\n')
        const replies = [await first!.next(), await second!.next()]
        expect(replies.map((r) => r.code)).toEqual([250, 250])
        expect(await subjects()).toEqual(
          expect.arrayContaining(['first of two', 'second of two', 'other address, same moment']),
        )
        await until(() => readdirSync(spoolDir).length === 0, 'the spool file to go')
        await Promise.all([first!.quit(), second!.quit()])
      })

      test('200 parallel over-size DATA streams: each 552, no crash, a legitimate sender meanwhile stored, no bytes left held', async () => {
        const flooder = '127.0.0.22'
        const streams = await Promise.all(Array.from({ length: 200 }, () => inData(flooder)))
        const body = message('flood', 80 * KiB)
        const replies = Promise.all(
          streams.map((client) => {
            client.writeBody(body)
            client.socket.write('\r\n.\r\n')
            return client.next()
          }),
        )
        const legit = await sendMail(
          port(),
          { to: [inbox.address] },
          message('legitimate beside 200 floods', 60 * KiB),
          LEGIT,
        )
        expect(legit.data?.code).toBe(250)
        expect(new Set((await replies).map((r) => r.code))).toEqual(new Set([552]))
        await Promise.all(streams.map((client) => client.quit()))
        // Nothing of the flood stays held: the flooding address can use its whole half again.
        expect(
          (await sendMail(port(), { to: [inbox.address] }, message('after the flood', 60 * KiB), flooder)).data?.code,
        ).toBe(250)
        expect(await subjects()).toEqual(expect.arrayContaining(['legitimate beside 200 floods', 'after the flood']))
        expect((await server.get('/health')).status).toBe(200)
      })
    })
  },
)
