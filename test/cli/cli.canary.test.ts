/**
 * `cli canary` as a real process against a real server: it passes end to end and leaves no
 * inbox behind; against a stopped server it fails naming the step; a send that cannot connect
 * and a message that never arrives each fail at their own step, and the inbox is deleted all
 * the same.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { join } from 'node:path'
import { startTestServer, type TestServer } from '../support/harness.ts'

setDefaultTimeout(60_000)

const ROOT = join(import.meta.dir, '..', '..')

async function canary(...args: string[]) {
  // No DATABASE_PATH, run from another folder: the canary needs none.
  const child = Bun.spawn(['bun', join(ROOT, 'src/cli.ts'), 'canary', ...args], { cwd: '/', env: { PATH: process.env.PATH }, stdout: 'pipe', stderr: 'pipe' })
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  return { code, stdout, stderr }
}

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
    const closed = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
    const port = closed.port
    closed.stop(true) // nothing listens there now
    const run = await canary('--url', server.url, '--key', key, '--smtp', `127.0.0.1:${port}`)
    expect(run.code).toBe(3)
    expect(run.stderr.trimEnd()).toStartWith(`canary failed at send: no SMTP server took the connection: 127.0.0.1:${port} (as given): `)
    expect(run.stdout).toContain('delete inbox  ok')
    expect(await activeInboxes()).toBe(0)
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
    const run = await canary('--url', server.url, '--key', `ph_live_${'0'.repeat(16)}_${'0'.repeat(48)}`, '--smtp', `127.0.0.1:${server.app.smtpPort}`)
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
