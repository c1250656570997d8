/**
 * Small single-part messages are parsed on the event loop, without the round trip to a
 * worker; a multipart one, or one over PARSE_ON_EVENT_LOOP_MAX_BYTES, goes to the worker
 * pool. The most hostile single-part shapes at that size are handled like any other message
 * and hold the loop for at most 50 ms of main-thread CPU, the bound every message meets
 * (on a busy machine, in one of up to eight tries: `measureWithin` says why that is sound).
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { PARSE_ON_EVENT_LOOP_MAX_BYTES } from '../../src/core/inbound/receive.ts'
import { SINGLE_PART_SHAPES, singlePartAt } from '../support/adversarial-mail.ts'
import { MEASURE_TRIES, measureWithin, STALL_BOUND_MS, watchEventLoop } from '../support/event-loop.ts'
import type { TestServer, Tenant } from '../support/harness.ts'
import { startWithInbox } from '../support/messages.ts'
import { SmtpClient } from '../support/smtp.ts'

let server: TestServer
let tenant: Tenant
let inbox: { id: string; address: string }
beforeAll(async () => {
  ;({ server, tenant, inbox } = await startWithInbox())
  // The whole suite shares this process: what earlier files left is not this file's cost.
  Bun.gc(true)
})
afterAll(() => server.stop())

const handedToWorkers = () => server.app.services.parser.messagesHandedOver

/** Sends `raw` (ending in CRLF, no line starting with a dot) as it is; the reply and the loop's longest hold. */
async function send(raw: string): Promise<{ code: number; text: string; cpuMs: number }> {
  expect(raw.endsWith('\r\n')).toBe(true)
  expect(/(^|\n)\./.test(raw)).toBe(false)
  const client = await SmtpClient.connect(server.app.smtpPort)
  try {
    await client.command('EHLO small.test')
    await client.command('MAIL FROM:<sender@example.net>')
    expect((await client.command(`RCPT TO:<${inbox.address}>`)).code).toBe(250)
    expect((await client.command('DATA')).code).toBe(354)
    const loop = watchEventLoop(1)
    client.socket.write(`${raw}.\r\n`)
    const reply = await client.next()
    return { ...reply, cpuMs: loop.stop().cpuMs }
  } finally {
    await client.quit()
  }
}

/** `send`, taken again while over the stall bound; the try within it and how many tries were made. */
async function sendMeasured(raw: string) {
  const { result, tries } = await measureWithin(
    () => send(raw),
    (r) => r.cpuMs < STALL_BOUND_MS,
  )
  return { ...result, tries }
}

const plain = (bytes: number) =>
  singlePartAt(
    bytes,
    inbox.address,
    `From: sender@example.net\r\nTo: ${inbox.address}\r\nSubject: plain\r\n\r\n`,
    'plain text\r\n',
    '',
  )

test(`single-part messages up to ${PARSE_ON_EVENT_LOOP_MAX_BYTES} bytes are parsed on the event loop; one byte more goes to a worker`, async () => {
  expect(handedToWorkers()).toBe(0)
  expect((await send(plain(2048))).code).toBe(250)
  expect((await send(plain(PARSE_ON_EVENT_LOOP_MAX_BYTES))).code).toBe(250)
  expect(handedToWorkers()).toBe(0)
  expect(server.app.services.parser.workers).toBe(0)
  expect((await send(plain(PARSE_ON_EVENT_LOOP_MAX_BYTES + 1))).code).toBe(250)
  expect(handedToWorkers()).toBe(1)
  const sizes = (await server.get(`/v1/inboxes/${inbox.id}/messages`, tenant.key)).body.data.map(
    (m: { size_bytes: number }) => m.size_bytes,
  )
  expect(sizes).toEqual([PARSE_ON_EVENT_LOOP_MAX_BYTES + 1, PARSE_ON_EVENT_LOOP_MAX_BYTES, 2048])
})

test('a small multipart message goes to a worker', async () => {
  const before = handedToWorkers()
  const raw = [
    'From: sender@example.net',
    `To: ${inbox.address}`,
    'Subject: parts',
    'Content-Type: multipart/alternative; boundary=b',
    '',
    '--b',
    'Content-Type: text/plain',
    '',
    'hi',
    '--b',
    'Content-Type: text/html',
    '',
    '<p>hi</p>',
    '--b--',
    '',
  ].join('\r\n')
  expect((await send(raw)).code).toBe(250)
  expect(handedToWorkers()).toBe(before + 1)
  const [message] = (await server.get(`/v1/inboxes/${inbox.id}/messages?limit=1&include=content`, tenant.key)).body.data
  expect(message.html).toContain('<p>hi</p>')
})

// Its body is base64: the digest of 1,000 empty parts inside shows only once decoded.
test('a small message nesting an encoded message goes to a worker when the nesting is found, without holding the loop', async () => {
  const before = handedToWorkers()
  const digest = ['Content-Type: multipart/digest; boundary=b', '', ...Array(1000).fill('--b'), '--b--', ''].join('\n')
  const encoded = Buffer.from(digest).toString('base64').replace(/.{76}/g, '$&\r\n')
  const raw = [
    'From: sender@example.net',
    `To: ${inbox.address}`,
    'Subject: nested',
    'Content-Type: message/rfc822',
    'Content-Transfer-Encoding: base64',
    '',
    encoded,
    '',
  ].join('\r\n')
  expect(Buffer.byteLength(raw)).toBeLessThanOrEqual(PARSE_ON_EVENT_LOOP_MAX_BYTES)
  expect(raw).not.toContain('\n--')
  const result = await sendMeasured(raw)
  expect(result.code).toBe(250)
  expect(handedToWorkers()).toBe(before + result.tries)
  expect(result.cpuMs).toBeLessThan(STALL_BOUND_MS)
})

for (const [name, [prefix, unit, suffix]] of Object.entries(SINGLE_PART_SHAPES)) {
  test(`${name}, ${PARSE_ON_EVENT_LOOP_MAX_BYTES} bytes: answered, without holding the event loop`, async () => {
    const before = handedToWorkers()
    const raw = singlePartAt(PARSE_ON_EVENT_LOOP_MAX_BYTES, inbox.address, prefix, unit, suffix)
    expect(Buffer.byteLength(raw)).toBe(PARSE_ON_EVENT_LOOP_MAX_BYTES)
    const result = await sendMeasured(raw)
    console.log(
      `${name}: ${result.code}, ${result.cpuMs.toFixed(1)} ms of main-thread CPU (${result.tries} of up to ${MEASURE_TRIES} tries)`,
    )
    expect(result.code).toBe(250)
    expect(result.cpuMs).toBeLessThan(STALL_BOUND_MS)
    expect(handedToWorkers()).toBe(before) // parsed on the event loop, not handed to a worker
  })
}
