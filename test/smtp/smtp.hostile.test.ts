/**
 * Hostile SMTP clients: pipelining floods, over-long lines, relaying attempts and smuggled
 * end-of-data forms. Each case proves the documented refusal, no crash, and that a
 * legitimate client sending at the same time from another address has its message stored.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { startTestServer, type TestServer, type Tenant } from '../support/harness.ts'
import { SmtpClient, sendMail, simpleMessage } from '../support/smtp.ts'

// A hang's deadline, not a speed: on a busy machine this file's servers, processes or
// generated cases take well over Bun's default of 5 s.
setDefaultTimeout(30_000)

const HOSTILE = '127.0.0.30'
const LEGIT = '127.0.0.31'
let server: TestServer
let tenant: Tenant
let inbox: { id: string; address: string }
let sent = 0

beforeAll(async () => {
  server = await startTestServer({
    env: { LIMIT_MONTHLY_EMAILS: '1000', LIMIT_INBOX_BURST: '1000', LIMIT_ORG_BURST: '1000' },
  })
  tenant = await server.tenant()
  inbox = (await server.post('/v1/inboxes', tenant.key)).body.data
})
afterAll(() => server.stop())

const port = () => server.app.smtpPort
const messages = async () =>
  (await server.get(`/v1/inboxes/${inbox.id}/messages?limit=100`, tenant.key)).body.data as Array<{
    id: string
    subject: string
  }>

/** Runs `attack` while a legitimate client sends; the legitimate message must be stored. */
async function beside<T>(attack: Promise<T>): Promise<T> {
  const subject = `legitimate ${++sent}`
  const [result, legit] = await Promise.all([
    attack,
    sendMail(port(), { to: [inbox.address] }, simpleMessage({ to: inbox.address, subject }), LEGIT),
  ])
  expect(legit.data?.code).toBe(250)
  expect((await messages()).map((m) => m.subject)).toContain(subject)
  expect((await server.get('/health')).status).toBe(200)
  return result
}

describe('hostile SMTP clients', () => {
  test('a pipelining flood of 20,000 commands sent without reading the replies', async () => {
    const replies = await beside(
      (async () => {
        const client = await SmtpClient.connect(port(), '127.0.0.1', HOSTILE)
        client.socket.write(
          'EHLO flood\r\n' +
            'NOOP\r\n'.repeat(10_000) +
            `MAIL FROM:<a@example.com>\r\nRCPT TO:<nobody@${server.config.receivingDomain}>\r\nRSET\r\n`.repeat(3_333) +
            'QUIT\r\n',
        )
        const codes: number[] = []
        for (let reply = await client.next(); reply.code !== 221; reply = await client.next()) codes.push(reply.code)
        client.destroy()
        return codes
      })(),
    )
    expect(replies.length).toBe(1 + 10_000 + 3 * 3_333)
    expect(replies.filter((code) => code === 550).length).toBe(3_333) // every RCPT refused, none accepted
    // A longer hang deadline: on PostgreSQL each of the 3,333 RCPTs is a database round trip
    // (about 20 s on two busy cores, against the file's 30 s).
  }, 90_000)

  test('a command line over 16 KiB gets 421 and the connection closes', async () => {
    const reply = await beside(
      (async () => {
        const client = await SmtpClient.connect(port(), '127.0.0.1', HOSTILE)
        client.socket.write(`EHLO ${'a'.repeat(20_000)}\r\n`)
        const answer = await client.next()
        await client.closed()
        return answer
      })(),
    )
    expect(reply).toEqual({ code: 421, text: 'Error: Command line too long' })
  })

  test('a message that is one 600 KiB line is stored whole', async () => {
    const text = 'z'.repeat(600 * 1024)
    const result = await beside(
      sendMail(
        port(),
        { to: [inbox.address] },
        simpleMessage({ to: inbox.address, subject: 'one long line', text }),
        HOSTILE,
      ),
    )
    expect(result.data?.code).toBe(250)
    const id = (await messages()).find((m) => m.subject === 'one long line')!.id
    expect((await server.get(`/v1/messages/${id}`, tenant.key)).body.data.text.trim()).toBe(text)
  })

  test('relaying attempts: foreign domains, source routes, percent hacks and bare postmaster are refused', async () => {
    const replies = await beside(
      (async () => {
        const client = await SmtpClient.connect(port(), '127.0.0.1', HOSTILE)
        await client.command('EHLO relay.example')
        await client.command('MAIL FROM:<spammer@example.com>')
        const local = inbox.address.split('@')[0]
        const attempts = [
          'victim@gmail.com',
          `@${server.config.receivingDomain}:victim@gmail.com`,
          `victim%gmail.com@${server.config.receivingDomain}`,
          `${local}@gmail.com`,
          'postmaster',
          `"victim@gmail.com"@${server.config.receivingDomain}`,
        ]
        const answers = []
        for (const to of attempts) answers.push(await client.command(`RCPT TO:<${to}>`))
        answers.push(await client.command('DATA'))
        await client.quit()
        return answers
      })(),
    )
    // 550 Recipient address rejected; the quoted local part with an @ is a syntax error (501).
    expect(replies.slice(0, -1).map((r) => r.code)).toEqual([550, 550, 550, 550, 550, 501])
    expect(replies[0]!.text).toBe('Recipient address rejected')
    expect(replies.at(-1)!.code).toBe(503) // no recipient, no DATA
  })

  for (const [name, terminator] of [
    ['bare LF dot LF', '\n.\n'],
    ['CR LF dot LF', '\r\n.\n'],
    ['LF dot CR LF', '\n.\r\n'],
    ['CR dot CR', '\r.\r'],
  ] as const) {
    test(`a smuggled end of data (${name}) ends nothing: one message, the smuggled commands are its text`, async () => {
      const before = (await messages()).length
      const reply = await beside(
        (async () => {
          const client = await SmtpClient.connect(port(), '127.0.0.1', HOSTILE)
          await client.command('EHLO smuggler')
          await client.command('MAIL FROM:<a@example.com>')
          await client.command(`RCPT TO:<${inbox.address}>`)
          await client.command('DATA')
          const head = simpleMessage({ to: inbox.address, subject: `smuggling ${name}`, text: 'before' })
          const smuggled = `MAIL FROM:<evil@example.com>\r\nRCPT TO:<${inbox.address}>\r\nDATA\r\nSubject: smuggled\r\n\r\nsmuggled body\r\n`
          client.socket.write(Buffer.from(`${head}${terminator}${smuggled}.\r\n`, 'latin1'))
          const answer = await client.next()
          await client.quit()
          return answer
        })(),
      )
      expect(reply.code).toBe(250)
      const after = await messages()
      expect(after.length).toBe(before + 2) // the smuggling one and the legitimate one, nothing else
      expect(after.map((m) => m.subject)).not.toContain('smuggled')
      const stored = after.find((m) => m.subject === `smuggling ${name}`)!
      expect((await server.get(`/v1/messages/${stored.id}`, tenant.key)).body.data.text).toContain(
        'MAIL FROM:<evil@example.com>',
      )
    })
  }
})
