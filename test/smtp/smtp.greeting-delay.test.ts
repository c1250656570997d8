/**
 * The SMTP greeting delay is ours to choose (SMTP_GREETING_DELAY_MS, 0 by default). Upstream
 * smtp-server holds every 220 for a fixed 100 ms; our pinned patch makes it an option. If an
 * update of smtp-server drops the patch, the default-0 test below fails.
 */
import { afterEach, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { SmtpClient, simpleMessage } from '../support/smtp.ts'

/** The fixed hold upstream would bring back. */
const UPSTREAM_HOLD_MS = 100

let server: TestServer
afterEach(() => server?.stop())

interface Opening {
  /** From the socket's connect event to the first reply line. */
  ms: number
  line: string
  /** Whether the server closed the connection within 2 s of that line. */
  closed: Promise<boolean>
  hangUp(): void
}

/** Connects, optionally writes at once (an early talker), and times the first reply line. */
function open(port: number, early?: string): Promise<Opening> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    let connectedAt = 0
    let buffer = ''
    const closed = new Promise<boolean>((done) => {
      socket.once('close', () => done(true))
      setTimeout(() => done(false), 2_000).unref()
    })
    socket.setEncoding('latin1')
    socket.once('connect', () => {
      connectedAt = performance.now()
      if (early) socket.write(early)
    })
    socket.on('data', (chunk: string) => {
      buffer += chunk
      const end = buffer.indexOf('\r\n')
      if (end < 0) return
      socket.removeAllListeners('data')
      resolve({
        ms: performance.now() - connectedAt,
        line: buffer.slice(0, end),
        closed,
        hangUp: () => socket.destroy(),
      })
    })
    socket.once('error', reject)
  })
}

describe('SMTP greeting delay', () => {
  test('by default the 220 is sent at once, not held 100 ms', async () => {
    server = await startTestServer()
    const times: number[] = []
    for (let i = 0; i < 5; i++) {
      const opening = await open(server.app.smtpPort)
      expect(opening.line).toStartWith('220 ')
      times.push(opening.ms)
      opening.hangUp()
    }
    // A timer of 100 ms never fires early, so with the hold back every sample would be at
    // least 100 ms; the fastest of five stays far below it even on a loaded machine.
    expect(Math.min(...times)).toBeLessThan(UPSTREAM_HOLD_MS / 2)
  })

  test('a configured delay holds the greeting, and a client that waits for it is served as usual', async () => {
    server = await startTestServer({ env: { SMTP_GREETING_DELAY_MS: '300' } })
    const opening = await open(server.app.smtpPort)
    expect(opening.line).toStartWith('220 ')
    expect(opening.ms).toBeGreaterThanOrEqual(295) // timers may round down by a millisecond or so
    opening.hangUp()

    const tenant = await server.tenant()
    const inbox = (await server.post('/v1/inboxes', tenant.key)).body.data
    const client = await SmtpClient.connect(server.app.smtpPort)
    expect((await client.command('EHLO test')).code).toBe(250)
    const sent = await client.transaction({ to: [inbox.address] }, simpleMessage({ to: inbox.address }))
    expect(sent.data!.code).toBe(250)
    await client.quit()
  })

  test('with a delay set, a client that talks before the greeting gets 421 and is disconnected, storing nothing', async () => {
    server = await startTestServer({ env: { SMTP_GREETING_DELAY_MS: '500' } })
    const tenant = await server.tenant()
    const inbox = (await server.post('/v1/inboxes', tenant.key)).body.data
    const pipelined = [
      'EHLO spam.example',
      'MAIL FROM:<a@spam.example>',
      `RCPT TO:<${inbox.address}>`,
      'DATA',
      simpleMessage({ to: inbox.address }),
      '.',
      '',
    ].join('\r\n')
    const opening = await open(server.app.smtpPort, pipelined)
    expect(opening.line).toMatch(/^421 .*You talk too soon/)
    expect(await opening.closed).toBe(true)
    expect((await server.get(`/v1/inboxes/${inbox.id}/messages`, tenant.key)).body.data).toEqual([])
    expect((await server.get('/v1/usage', tenant.key)).body.emails.received).toBe(0)
  })
})

test('smtp-server is pinned to the exact version its patch was made for, and the patch is declared', () => {
  const root = join(import.meta.dir, '..', '..')
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
  const installed = JSON.parse(readFileSync(join(root, 'node_modules', 'smtp-server', 'package.json'), 'utf8'))
  const pinned: string = manifest.dependencies['smtp-server']
  expect(pinned).toMatch(/^\d+\.\d+\.\d+$/)
  expect(installed.version).toBe(pinned)
  expect(manifest.patchedDependencies[`smtp-server@${pinned}`]).toBe(`patches/smtp-server@${pinned}.patch`)
})
