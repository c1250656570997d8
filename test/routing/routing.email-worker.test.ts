/**
 * The README's Cloudflare set-up end to end, minus Cloudflare itself: an inbox made with
 * EMAIL_ROUTING=cloudflare gets a Worker rule, and the Email Worker's relay
 * (examples/cloudflare-email-worker.ts) delivers into it over a real TCP connection to the
 * real SMTP listener, byte for byte, or hands back Pigeonhole's refusal.
 */
import { afterEach, beforeEach, expect, test } from 'bun:test'
import { connect } from 'node:net'
import { Duplex } from 'node:stream'
import { deliver, relay, type InboundEmail, type RelaySocket } from '../../examples/cloudflare-email-worker.ts'
import type { Tenant } from '../support/harness.ts'
import { startWithFakeCloudflare } from '../support/routing.ts'

let started: Awaited<ReturnType<typeof startWithFakeCloudflare>>
let tenant: Tenant
beforeEach(async () => {
  started = await startWithFakeCloudflare()
  tenant = await started.server.tenant()
})
afterEach(() => started.stop())

async function smtpSocket(port: number): Promise<RelaySocket> {
  const socket = connect(port, '127.0.0.1')
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject))
  const { readable, writable } = Duplex.toWeb(socket) as unknown as {
    readable: ReadableStream<Uint8Array>
    writable: WritableStream<Uint8Array>
  }
  return { readable, writable, close: () => socket.destroy() }
}

const rawOf = (text: string) => new Blob([text]).stream() as ReadableStream<Uint8Array>

test('the Worker relays a message into the inbox whose rule sent it there', async () => {
  const { server, fake } = started
  const inbox = (await server.post('/v1/inboxes', tenant.key, { prefix: 'via-worker' })).body.data
  expect(fake.rulesFor(inbox.address)[0]!.actions).toEqual([{ type: 'worker', value: ['pigeonhole-relay'] }])

  const body = ['.leading dot stays', '..two dots stay', 'Grüße, 8-bit', '.'].join('\r\n')
  const raw = [
    `From: Sender <app@example.com>`,
    `To: ${inbox.address}`,
    'Subject: relayed',
    'Content-Type: text/plain; charset=utf-8',
    '',
    body,
    '',
  ].join('\r\n')
  await relay({ from: 'app@example.com', to: inbox.address, raw: rawOf(raw) }, await smtpSocket(server.app.smtpPort))

  const listed = await server.get(`/v1/inboxes/${inbox.id}/messages?limit=1&include=content`, tenant.key)
  expect(listed.body.data[0].subject).toBe('relayed')
  expect(listed.body.data[0].text.replace(/\r?\n$/, '')).toBe(body.replaceAll('\r\n', '\n'))
})

test("Pigeonhole's refusal goes back to the sender as a rejection with its own text", async () => {
  const { server } = started
  const rejections: string[] = []
  const message: InboundEmail = {
    from: 'app@example.com',
    to: 'never-made@inbox.test',
    raw: rawOf('Subject: x\r\n\r\nx\r\n'),
    setReject: (reason) => rejections.push(reason),
  }
  await deliver(message, await smtpSocket(server.app.smtpPort))
  expect(rejections).toHaveLength(1)
  expect(rejections[0]).toContain('Recipient address rejected')
})

test('a connection that closes mid-conversation is an error, not a silent drop', async () => {
  const closing = Bun.listen({
    hostname: '127.0.0.1',
    port: 0,
    socket: { open: (socket) => void socket.end('220 hello\r\n'), data: () => {} },
  })
  try {
    const message: InboundEmail = { from: 'a@example.com', to: 'b@inbox.test', raw: rawOf('x'), setReject: () => {} }
    const error = await deliver(message, await smtpSocket(closing.port)).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(Error)
  } finally {
    closing.stop(true)
  }
})
