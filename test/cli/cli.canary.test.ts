/**
 * `cli canary` as a real process against a real server: it passes end to end and leaves no
 * inbox behind; against a stopped server it fails naming the step; a send that cannot connect
 * (to a given host, or to the MX hosts a real DNS exchange names, in order) and a message that
 * never arrives each fail at their own step, and the inbox is deleted all the same.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { createSocket } from 'node:dgram'
import { connect } from 'node:net'
import { join } from 'node:path'
import { startTestServer, type TestServer } from '../support/harness.ts'

setDefaultTimeout(60_000)

const ROOT = join(import.meta.dir, '..', '..')

async function canary(...args: string[]) {
  // No DATABASE_PATH, run from another folder: the canary needs none.
  const child = Bun.spawn(['bun', join(ROOT, 'src/cli.ts'), 'canary', ...args], {
    cwd: '/',
    env: { PATH: process.env.PATH },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ])
  return { code, stdout, stderr }
}

/**
 * A DNS server on UDP that answers every MX question with `records` (none: an empty answer,
 * as for a domain without MX records), enough of RFC 1035 for the canary's lookup.
 */
async function fakeDns(records: { preference: number; exchange: string }[]) {
  const questions: string[] = []
  const socket = createSocket('udp4')
  const name = (host: string) =>
    Buffer.concat([
      ...host.split('.').map((label) => Buffer.concat([Buffer.from([label.length]), Buffer.from(label)])),
      Buffer.from([0]),
    ])
  socket.on('message', (query, peer) => {
    let at = 12
    const labels: string[] = []
    while (query[at] !== 0) {
      labels.push(query.subarray(at + 1, at + 1 + query[at]!).toString())
      at += query[at]! + 1
    }
    questions.push(labels.join('.'))
    const question = query.subarray(12, at + 5) // the name, its type and class
    const header = Buffer.alloc(12)
    query.copy(header, 0, 0, 2) // the id
    header.writeUInt16BE(0x8180, 2) // a response, recursion desired and available, no error
    header.writeUInt16BE(1, 4)
    header.writeUInt16BE(records.length, 6)
    const answers = records.map((r) => {
      const data = Buffer.concat([Buffer.from([r.preference >> 8, r.preference & 0xff]), name(r.exchange)])
      const fixed = Buffer.alloc(12)
      fixed.writeUInt16BE(0xc00c, 0) // the question's name
      fixed.writeUInt16BE(15, 2) // MX
      fixed.writeUInt16BE(1, 4) // IN
      fixed.writeUInt32BE(60, 6)
      fixed.writeUInt16BE(data.length, 10)
      return Buffer.concat([fixed, data])
    })
    socket.send(Buffer.concat([header, question, ...answers]), peer.port, peer.address)
  })
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve))
  return { address: `127.0.0.1:${socket.address().port}`, questions, close: () => socket.close() }
}

/** A port on 127.0.0.1 nobody listens on right now. */
function closedPort(): number {
  const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = probe.port
  probe.stop(true)
  return port
}

/** Whether something listens on 127.0.0.1:25 (a machine's own MTA): the MX tests need nothing there. */
const port25Taken = await new Promise<boolean>((resolve) => {
  const probe = connect({ host: '127.0.0.1', port: 25 }, () => {
    probe.destroy()
    resolve(true)
  })
  probe.on('error', () => resolve(false))
})
if (port25Taken) console.warn('skipped: the canary MX tests (something listens on 127.0.0.1:25 here)')

/** An SMTP server that accepts every message and keeps none: mail "sent" that never arrives. */
function blackHole() {
  return Bun.listen({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      open: (socket) => void socket.write('220 black hole\r\n'),
      data(socket, data) {
        const text = data.toString()
        if (/\r\n\.\r\n$/.test(text)) socket.write('250 taken, then dropped\r\n')
        else if (text.startsWith('DATA')) socket.write('354 go on\r\n')
        else if (text.startsWith('QUIT')) socket.end('221 bye\r\n')
        else if (/^[A-Z]{4}/.test(text)) socket.write('250 ok\r\n')
      },
    },
  })
}

describe('cli canary', () => {
  let server: TestServer
  let key: string

  beforeAll(async () => {
    server = await startTestServer()
    key = (await server.tenant('canary-org')).key
  })
  afterAll(() => server.stop())

  const activeInboxes = async () => (await server.get('/v1/inboxes', key)).body.data.length

  test('passes against the running server, one line per step, and leaves no inbox behind', async () => {
    const run = await canary('--url', server.url, '--key', key, '--smtp', `127.0.0.1:${server.app.smtpPort}`)
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' })
    const lines = run.stdout.trimEnd().split('\n')
    expect(lines.map((line) => line.split(/\s{2,}/).slice(0, 2))).toEqual([
      ['create inbox', 'ok'],
      ['send', 'ok'],
      ['wait', 'ok'],
      ['delete inbox', 'ok'],
      [expect.stringMatching(/^ok: mail flowed end to end in \d+\.\d\d s$/)],
    ])
    expect(lines[1]).toContain(`via 127.0.0.1:${server.app.smtpPort} (as given): 250`)
    expect(lines[2]).toMatch(/msg_[0-9a-f]{32}, received /)
    expect(await activeInboxes()).toBe(0)
  })

  test('a send that cannot connect fails at "send", and the inbox is deleted all the same', async () => {
    const port = closedPort()
    const run = await canary('--url', server.url, '--key', key, '--smtp', `127.0.0.1:${port}`)
    expect(run.code).toBe(3)
    expect(run.stderr.trimEnd()).toStartWith(
      `canary failed at send: no SMTP server took the connection: 127.0.0.1:${port} (as given): `,
    )
    expect(run.stdout).toContain('delete inbox  ok')
    expect(await activeInboxes()).toBe(0)
  })

  test.skipIf(port25Taken)(
    "without --smtp it sends to the domain's MX hosts in order of preference, trying the next when one cannot be reached",
    async () => {
      // Port 25 of 127.0.0.1 and of localhost: no SMTP server listens there in the tests.
      const dns = await fakeDns([
        { preference: 20, exchange: 'localhost' },
        { preference: 10, exchange: '127.0.0.1' },
      ])
      try {
        const run = await canary('--url', server.url, '--key', key, '--dns', dns.address)
        expect(dns.questions).toEqual(['inbox.test'])
        expect(run.code).toBe(3)
        expect(run.stderr).toMatch(
          /^canary failed at send: no SMTP server took the connection: 127\.0\.0\.1:25 \(MX 10 of inbox\.test\): .+; localhost:25 \(MX 20 of inbox\.test\): .+\n$/,
        )
        expect(await activeInboxes()).toBe(0)
      } finally {
        dns.close()
      }
    },
  )

  test.skipIf(port25Taken)('a domain without MX records is sent to the domain itself (RFC 5321 §5.1)', async () => {
    const dns = await fakeDns([])
    try {
      const run = await canary('--url', server.url, '--key', key, '--dns', dns.address)
      expect(run.code).toBe(3)
      expect(run.stderr).toStartWith(
        'canary failed at send: no SMTP server took the connection: inbox.test:25 (inbox.test itself (no MX record)): ',
      )
    } finally {
      dns.close()
    }
  })

  test('mail that never arrives fails at "wait" after the timeout', async () => {
    const hole = blackHole()
    try {
      const run = await canary('--url', server.url, '--key', key, '--smtp', `127.0.0.1:${hole.port}`, '--timeout', '2')
      expect(run.code).toBe(4)
      expect(run.stderr.trimEnd()).toBe('canary failed at wait: the message did not arrive within 2 s')
      expect(await activeInboxes()).toBe(0)
    } finally {
      hole.stop(true)
    }
  })

  test('a wrong key fails at "create inbox" with the API\'s error code', async () => {
    const run = await canary(
      '--url',
      server.url,
      '--key',
      `ph_live_${'0'.repeat(16)}_${'0'.repeat(48)}`,
      '--smtp',
      `127.0.0.1:${server.app.smtpPort}`,
    )
    expect(run.code).toBe(2)
    expect(run.stderr.trimEnd()).toBe('canary failed at create inbox: POST /v1/inboxes answered 401 invalid_api_key')
  })

  test('against a stopped server it fails at "create inbox", naming the address', async () => {
    const url = server.url
    await server.app.stop()
    const run = await canary('--url', url, '--key', key, '--smtp', `127.0.0.1:${server.app.smtpPort}`)
    expect(run.code).toBe(2)
    expect(run.stderr).toStartWith(`canary failed at create inbox: POST ${url}/v1/inboxes: `)
    expect(run.stdout).not.toContain('send')
  })

  test('without a URL or a key it says which is missing', async () => {
    const noUrl = await canary('--key', key)
    expect(noUrl.code).toBe(64)
    expect(noUrl.stderr).toStartWith("canary: give the API's URL (--url or PIGEONHOLE_URL)")
    const noKey = await canary('--url', 'http://127.0.0.1:1')
    expect(noKey.code).toBe(64)
    expect(noKey.stderr).toStartWith('canary: give an API key (--key or PIGEONHOLE_KEY)')
  })
})
