/**
 * The example client (examples/pigeonhole.ts) where a newcomer gets stuck: an empty key, a
 * wait that ends because a limit refused the mail, a server that is not listening yet (or
 * restarts) while a test waits, and a teardown over the request rate limit.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { connect, createServer, type Socket } from 'node:net'
import { ManualClock } from '../../src/clock.ts'
import { Pigeonhole, smtpFromEnv, uniquePrefix } from '../../examples/pigeonhole.ts'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { sendMail } from '../support/smtp.ts'
import { until } from '../support/wait.ts'

const servers: TestServer[] = []
afterAll(() => Promise.all(servers.map((s) => s.stop())))
const start = async (...args: Parameters<typeof startTestServer>) => {
  const server = await startTestServer(...args)
  servers.push(server)
  return server
}
const mail = (server: TestServer, to: string, subject: string) =>
  sendMail(
    server.app.smtpPort,
    { to: [to] },
    `From: app@example.com\r\nTo: ${to}\r\nSubject: ${subject}\r\n\r\nhello\r\n`,
  )

test('an empty PIGEONHOLE_KEY stops with a message naming the variable, before any request', () => {
  expect(() => Pigeonhole.fromEnv({ PIGEONHOLE_URL: 'http://127.0.0.1:9' })).toThrow('PIGEONHOLE_KEY is empty')
  expect(() => Pigeonhole.fromEnv({ PIGEONHOLE_KEY: '' })).toThrow('PIGEONHOLE_KEY is empty')
})

test('PIGEONHOLE_SMTP is host:port, with a readable refusal otherwise', () => {
  expect(smtpFromEnv({})).toEqual({ host: '127.0.0.1', port: 2525 })
  expect(smtpFromEnv({ PIGEONHOLE_SMTP: 'mail.test:2626' })).toEqual({ host: 'mail.test', port: 2626 })
  expect(() => smtpFromEnv({ PIGEONHOLE_SMTP: '2525' })).toThrow('expected host:port')
})

test('uniquePrefix gives a valid prefix that differs per call', () => {
  const prefixes = Array.from({ length: 50 }, () => uniquePrefix('signup'))
  expect(new Set(prefixes).size).toBe(50)
  for (const prefix of prefixes) expect(prefix).toMatch(/^signup-[0-9a-f]{8}$/)
  expect(uniquePrefix('x'.repeat(60)).length).toBeLessThanOrEqual(40)
})

// Each test starts a server of its own (about a second on a busy machine).
describe('a wait that ends without mail says which limit likely refused it', () => {
  test('the monthly quota used up', async () => {
    const server = await start({ env: { LIMIT_MONTHLY_EMAILS: '1' } })
    const pigeonhole = new Pigeonhole({ url: server.url, key: (await server.tenant()).key })
    const inbox = await pigeonhole.createInbox()
    expect((await mail(server, inbox.address, 'first')).data?.code).toBe(250)
    expect((await mail(server, inbox.address, 'second')).rcpt[0]!.code).toBe(550)
    const waited = pigeonhole.waitForMessage(inbox, { subject: 'second', timeout: 1_000 })
    await expect(waited).rejects.toThrow(
      'monthly email quota is used up (1 of 1): Pigeonhole refuses further mail with "550 Monthly recipient quota exceeded"',
    )
  }, 20_000)

  test("the inbox's burst", async () => {
    const server = await start({ env: { LIMIT_INBOX_BURST: '10' } })
    const pigeonhole = new Pigeonhole({ url: server.url, key: (await server.tenant()).key })
    const inbox = await pigeonhole.createInbox()
    for (let i = 0; i < 10; i++) expect((await mail(server, inbox.address, `mail ${i}`)).data?.code).toBe(250)
    expect((await mail(server, inbox.address, 'eleventh')).rcpt[0]!.code).toBe(450)
    await expect(pigeonhole.waitForMessage(inbox, { subject: 'eleventh', timeout: 1_000 })).rejects.toThrow(
      'This inbox received 10 messages in the last five minutes: past the inbox\'s burst limit (10 on the free plan) mail is refused with "450 Inbox receive rate exceeded"',
    )
  }, 20_000)

  test('no limit reached: the address and the route are the suspects', async () => {
    const server = await start()
    const pigeonhole = new Pigeonhole({ url: server.url, key: (await server.tenant()).key })
    const inbox = await pigeonhole.createInbox()
    await expect(pigeonhole.waitForMessage(inbox, { timeout: 1_000 })).rejects.toThrow(
      `No mail with any message arrived at ${inbox.address} within 1 s. No limit looks reached`,
    )
  }, 20_000)
})

test('a wait begun before the server listens retries the refused connection and gets the mail', async () => {
  const server = await start()
  const key = (await server.tenant()).key
  const inbox = await new Pigeonhole({ url: server.url, key }).createInbox()
  // A port that was free a moment ago; nothing listens on it until the relay below starts.
  const port = await new Promise<number>((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number }
      probe.close(() => resolve(port))
    })
  })
  const waited = new Pigeonhole({ url: `http://127.0.0.1:${port}`, key }).waitForMessage(inbox, {
    subject: 'after restart',
    timeout: 10_000,
  })
  await Bun.sleep(600) // the scenario: nothing listens for a while, so the wait meets refused connections
  const relay = Bun.serve({
    port,
    hostname: '127.0.0.1',
    fetch: (request) =>
      fetch(new URL(new URL(request.url).pathname + new URL(request.url).search, server.url), request),
  })
  try {
    expect((await mail(server, inbox.address, 'after restart')).data?.code).toBe(250)
    expect((await waited).subject).toBe('after restart')
  } finally {
    relay.stop(true)
  }
}, 20_000)

test('a wait whose connection is closed under it (a server stopping) waits again with the time left', async () => {
  const server = await start()
  const key = (await server.tenant()).key
  const inbox = await new Pigeonhole({ url: server.url, key }).createInbox()
  // A TCP relay to the server that cuts the first connection after 300 ms, as a stopping
  // server closes a waiting long poll, and passes every later one through.
  const target = Number(new URL(server.url).port)
  const sockets: Socket[] = []
  let connections = 0
  const relay = createServer((client) => {
    sockets.push(client)
    if (++connections === 1) {
      setTimeout(() => client.destroy(), 300)
      return
    }
    const upstream = connect(target, '127.0.0.1')
    sockets.push(upstream)
    client.pipe(upstream).pipe(client)
    client.on('error', () => upstream.destroy())
    upstream.on('error', () => client.destroy())
  })
  const port = await new Promise<number>((resolve) =>
    relay.listen(0, '127.0.0.1', () => resolve((relay.address() as { port: number }).port)),
  )
  try {
    const waited = new Pigeonhole({ url: `http://127.0.0.1:${port}`, key }).waitForMessage(inbox, {
      subject: 'after the cut',
      timeout: 10_000,
    })
    await until(
      () => connections >= 2 && server.app.services.longPolls.total() === 1,
      'the wait to reconnect after the cut and wait again',
    )
    expect(connections).toBeGreaterThanOrEqual(2)
    expect((await mail(server, inbox.address, 'after the cut')).data?.code).toBe(250)
    expect((await waited).subject).toBe('after the cut')
  } finally {
    for (const socket of sockets) socket.destroy()
    relay.close()
  }
}, 20_000)

test('a rate-limited teardown waits out Retry-After and deletes the inbox', async () => {
  // Half a second before a UTC minute ends: Retry-After is 1 s, and the next minute is a new window.
  const clock = new ManualClock('2026-03-10T09:41:59.500Z')
  const server = await start({ clock, env: { LIMIT_REQUESTS_PER_KEY: '3' } })
  const tenant = await server.tenant()
  const pigeonhole = new Pigeonhole({ url: server.url, key: tenant.key })
  const inbox = await pigeonhole.createInbox()
  await pigeonhole.getUsage()
  await pigeonhole.getUsage()
  await expect(pigeonhole.getUsage()).rejects.toMatchObject({ code: 'rate_limit_exceeded', retryAfterSeconds: 1 })
  const deleted = pigeonhole.deleteInbox(inbox)
  // The teardown's first try is refused; the client now sleeps out Retry-After on real time.
  const refused = () =>
    server.logs.some((line) => line.event === 'http_request' && line.method === 'DELETE' && line.status === 429)
  await until(refused, 'the teardown to be refused')
  clock.advance(1_000)
  await deleted
  expect((await server.get(`/v1/inboxes/${inbox.id}`, tenant.key)).status).toBe(404)
}, 20_000)

test('a teardown whose answer is lost (the delete done, the connection cut) counts the 404 of its retry as deleted', async () => {
  const server = await start()
  const tenant = await server.tenant()
  const inbox = await new Pigeonhole({ url: server.url, key: tenant.key }).createInbox()
  // A TCP relay that lets the first request reach the server, then cuts the client off as
  // the answer comes back (a proxy or a stopping server dropping it); later ones pass.
  const target = Number(new URL(server.url).port)
  const sockets: Socket[] = []
  let connections = 0
  const relay = createServer((client) => {
    sockets.push(client)
    const first = ++connections === 1
    const upstream = connect(target, '127.0.0.1')
    sockets.push(upstream)
    client.pipe(upstream)
    if (first) upstream.once('data', () => client.destroy())
    else upstream.pipe(client)
    client.on('error', () => upstream.destroy())
    upstream.on('error', () => client.destroy())
  })
  const port = await new Promise<number>((resolve) =>
    relay.listen(0, '127.0.0.1', () => resolve((relay.address() as { port: number }).port)),
  )
  try {
    await new Pigeonhole({ url: `http://127.0.0.1:${port}`, key: tenant.key }).deleteInbox(inbox)
    expect(connections).toBe(2)
    expect((await server.get(`/v1/inboxes/${inbox.id}`, tenant.key)).status).toBe(404)
    // A delete of an unknown inbox that reached the server at once still says so.
    await expect(new Pigeonhole({ url: server.url, key: tenant.key }).deleteInbox(inbox)).rejects.toMatchObject({
      status: 404,
      code: 'inbox_not_found',
    })
  } finally {
    for (const socket of sockets) socket.destroy()
    relay.close()
  }
}, 20_000)

test('a wait asked again after its connection was cut asks for the time left, not its whole timeout', async () => {
  const server = await start()
  const key = (await server.tenant()).key
  const inbox = await new Pigeonhole({ url: server.url, key }).createInbox()
  // A TCP relay that notes each request's wait_seconds, cuts the first connection after a
  // second (a stopping server) and passes later ones through.
  const target = Number(new URL(server.url).port)
  const sockets: Socket[] = []
  const asked: number[] = []
  const relay = createServer((client) => {
    sockets.push(client)
    const first = sockets.length === 1
    client.once('data', (head) => {
      asked.push(Number(/wait_seconds=(\d+)/.exec(head.toString('latin1'))?.[1]))
      if (first) return void setTimeout(() => client.destroy(), 1_000)
      const upstream = connect(target, '127.0.0.1', () => upstream.write(head))
      sockets.push(upstream)
      client.pipe(upstream).pipe(client)
      client.on('error', () => upstream.destroy())
      upstream.on('error', () => client.destroy())
    })
  })
  const port = await new Promise<number>((resolve) =>
    relay.listen(0, '127.0.0.1', () => resolve((relay.address() as { port: number }).port)),
  )
  try {
    const waited = new Pigeonhole({ url: `http://127.0.0.1:${port}`, key }).waitForMessage(inbox, {
      subject: 'late',
      timeout: 10_000,
    })
    await until(() => asked.length >= 2, 'the wait to be asked again after the cut')
    expect((await mail(server, inbox.address, 'late')).data?.code).toBe(250)
    expect((await waited).subject).toBe('late')
    expect(asked[0]).toBe(10)
    expect(asked[1]).toBeLessThanOrEqual(9) // a second of the ten was spent before the cut
  } finally {
    for (const socket of sockets) socket.destroy()
    relay.close()
  }
}, 20_000)
