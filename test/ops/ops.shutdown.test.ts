/**
 * Graceful stop: a message in DATA still completes with 250, is on disk afterwards and
 * wakes a poll that waits for it; a waiting long poll is never told "nothing arrived"
 * (204) by a stop: it keeps waiting while mail can still arrive, then its connection is
 * closed without an answer so the client retries. New connections are refused, the
 * database closes cleanly.
 */
import { expect, setDefaultTimeout, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { connect } from 'node:net'
import { systemClock } from '../../src/clock.ts'
import { createApiKey } from '../../src/core/api-keys/keys.ts'
import { CLI_ACTOR } from '../../src/core/audit/audit.ts'
import { createOrganization } from '../../src/core/organizations/organizations.ts'
import { openStorage } from '../../src/storage/database.ts'
import { createSqliteStore } from '../../src/storage/sqlite/store.ts'
import { startTestServer } from '../support/harness.ts'
import { newInbox, principalOf, startRoomyServer } from '../support/messages.ts'
import { until } from '../support/wait.ts'
import { SmtpClient, simpleMessage } from '../support/smtp.ts'
import { scratchDir } from '../support/scratch.ts'

// A hang's deadline, not a speed: on a busy machine this file's servers, processes or
// generated cases take well over Bun's default of 5 s.
setDefaultTimeout(30_000)

test('stop drains in-flight work and refuses new work', async () => {
  const server = await startTestServer()
  const tenant = await server.tenant()
  const inbox = (await server.post('/v1/inboxes', tenant.key)).body.data

  const poll = server.get(`/v1/inboxes/${inbox.id}/messages?wait_seconds=60`, tenant.key)
  const client = await SmtpClient.connect(server.app.smtpPort)
  await client.command('EHLO test')
  await client.command('MAIL FROM:<a@example.com>')
  await client.command(`RCPT TO:<${inbox.address}>`)
  expect((await client.command('DATA')).code).toBe(354)
  client.writeBody(simpleMessage({ to: inbox.address, subject: 'in flight during shutdown' }))
  // DATA was acknowledged (354) and the body written; stop once the poll is registered too.
  await until(() => server.app.services.notifier.listenerCount(inbox.id) === 1, 'the poll to wait')

  const stopping = server.app.stop()
  // The stop does not answer the waiting poll: the transaction in DATA may still deliver.
  // Proves nothing happens: no answer within 200 ms of the stop.
  const early = await Promise.race([poll.then(() => 'answered'), Bun.sleep(200).then(() => 'still waiting')])
  expect(early).toBe('still waiting')

  client.socket.write('\r\n.\r\n')
  const reply = await client.next()
  expect(reply.code).toBe(250)
  // The message acknowledged during the stop wakes the poll with it.
  const polled = await poll
  expect(polled.status).toBe(200)
  expect(polled.body.data.map((message: { subject: string }) => message.subject)).toEqual(['in flight during shutdown'])
  client.destroy()
  await stopping

  const refused = await new Promise<boolean>((resolve) => {
    const socket = connect(server.app.smtpPort, '127.0.0.1')
    socket.once('connect', () => {
      socket.destroy()
      resolve(false)
    })
    socket.once('error', () => resolve(true))
  })
  expect(refused).toBe(true)
  expect(
    await fetch(`${server.url}/health`).then(
      () => 'answered',
      () => 'refused',
    ),
  ).toBe('refused')

  // The acknowledged message is on disk after the stop.
  const db = new Database(server.databasePath, { readonly: true })
  const row = db.query('SELECT subject FROM messages WHERE inbox_id = ?').get(inbox.id) as { subject: string } | null
  db.close()
  expect(row?.subject).toBe('in flight during shutdown')
  await server.stop()
})

test('a transaction begun before the stop finishes after it; a session without one gets 421 at its next command', async () => {
  const server = await startTestServer()
  const tenant = await server.tenant()
  const inbox = (await server.post('/v1/inboxes', tenant.key)).body.data
  const sending = await SmtpClient.connect(server.app.smtpPort)
  await sending.command('EHLO sending.test')
  expect((await sending.command('MAIL FROM:<a@example.com>')).code).toBe(250)
  const idle = await SmtpClient.connect(server.app.smtpPort)
  expect((await idle.command('EHLO idle.test')).code).toBe(250)

  const stopping = server.app.stop()
  // The transaction in progress (MAIL accepted) runs to its 250, RCPT and DATA included.
  expect((await sending.command(`RCPT TO:<${inbox.address}>`)).code).toBe(250)
  expect((await sending.data(simpleMessage({ to: inbox.address, subject: 'begun before the stop' }))).code).toBe(250)
  // A new transaction on either connection is refused, so the stop is not held by fresh mail.
  expect(await sending.command('MAIL FROM:<a@example.com>')).toEqual({ code: 421, text: 'Server shutting down' })
  expect(await idle.command('MAIL FROM:<a@example.com>')).toEqual({ code: 421, text: 'Server shutting down' })
  await Promise.all([sending.closed(), idle.closed()])
  await stopping

  const db = new Database(server.databasePath, { readonly: true })
  const row = db.query('SELECT subject FROM messages WHERE inbox_id = ?').get(inbox.id) as { subject: string } | null
  db.close()
  expect(row?.subject).toBe('begun before the stop')
  await server.stop()
})

test('a client that talks before the greeting while the server stops gets 421, and the stop ends', async () => {
  // With a greeting delay the session has no transaction state yet when the command comes.
  const server = await startTestServer({ env: { SMTP_GREETING_DELAY_MS: '5000' } })
  const early = connect(server.app.smtpPort, '127.0.0.1')
  let received = ''
  early.setEncoding('utf8').on('data', (chunk: string) => {
    received += chunk
  })
  const closed = new Promise<void>((resolve) => early.once('close', () => resolve()))
  await until(
    () => /^pigeonhole_smtp_sessions_open 1$/m.test(server.app.metrics.render()),
    'the server to hold the session',
  )
  const stopping = server.app.stop()
  await until(
    async () =>
      fetch(`${server.url}/health`).then(
        () => false,
        () => true,
      ),
    'the listeners to stop accepting',
  )
  early.write('EHLO early.test\r\n')
  await closed
  expect(received).toBe('421 Server shutting down\r\n')
  await stopping
  await server.stop()
})

test('a stop never answers a waiting poll with 204: it closes the connection, so the client retries', async () => {
  const own = await startRoomyServer()
  const tenant = await own.tenant()
  const inbox = await newInbox(own, tenant.key)
  const polls = Array.from({ length: 3 }, () =>
    fetch(`${own.url}/v1/inboxes/${inbox.id}/messages?wait_seconds=120`, {
      headers: { authorization: `Bearer ${tenant.key}` },
    }).then(
      (response) => `answered ${response.status}`,
      // Reset, or refused when the client's fetch retried on a fresh connection: a transport error either way.
      (error: { code?: string }) =>
        ['ECONNRESET', 'ECONNREFUSED'].includes(error.code ?? '') ? 'transport error' : `other error ${error.code}`,
    ),
  )
  await until(
    () => own.app.services.longPolls.count(principalOf(tenant.key, tenant.organizationId)).key === 3,
    'the polls to wait',
  )
  const stopped = own.stop()
  expect(await Promise.all(polls)).toEqual(Array(3).fill('transport error'))
  await stopped
  expect(own.app.services.longPolls.total()).toBe(0)
  expect(own.logs.find((line) => line.event === 'long_polls_cut')).toMatchObject({ count: 3 })
  // Each poll's request line says the answer never went out.
  const pollLines = () => own.logs.filter((line) => line.event === 'http_request' && line.path.endsWith('/messages'))
  await until(() => pollLines().length === 3, 'the polls to be logged')
  expect(pollLines().map((line) => line.connection_closed)).toEqual([true, true, true])
})

test('while SMTP drains, a poll stays open; when SMTP has closed the poll is cut, never answered 204', async () => {
  const own = await startRoomyServer()
  const tenant = await own.tenant()
  const inbox = await newInbox(own, tenant.key)
  // An SMTP session left open: the stop waits for it (up to smtp-server's closeTimeout,
  // 5 s), and the poll must still be waiting all that time.
  const idle = await SmtpClient.connect(own.app.smtpPort)
  await idle.command('EHLO slow.test')
  const poll = fetch(`${own.url}/v1/inboxes/${inbox.id}/messages?wait_seconds=120`, {
    headers: { authorization: `Bearer ${tenant.key}` },
  }).then(
    (response) => `answered ${response.status}`,
    () => 'connection closed',
  )
  await until(() => own.app.services.notifier.listenerCount(inbox.id) === 1, 'the poll to wait')
  const startedAt = performance.now()
  const stopped = own.stop()
  expect(await poll).toBe('connection closed')
  // Held until smtp-server gave up on the idle session (its closeTimeout), not cut at once.
  expect(performance.now() - startedAt).toBeGreaterThan(4_000)
  idle.destroy()
  await stopped
}, 15_000)

test('bun run start stops cleanly on SIGTERM, closing a waiting poll without an answer', async () => {
  const METRICS = 'metrics-token-0123456789abcdef'
  const { rmSync } = await import('node:fs')
  const { join } = await import('node:path')
  const dir = scratchDir('pigeonhole-sigterm-')
  const child = Bun.spawn(['bun', join(import.meta.dir, '..', '..', 'src', 'index.ts')], {
    env: {
      ...process.env,
      PORT: '0',
      SMTP_PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_PATH: join(dir, 'db.sqlite'),
      METRICS_TOKEN: METRICS,
    },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const reader = child.stdout.getReader()
  let out = ''
  while (!out.includes('"smtp_listening"')) {
    const { value, done } = await reader.read()
    if (done) break
    out += new TextDecoder().decode(value)
  }
  const port = JSON.parse(out.split('\n').find((line) => line.includes('"http_listening"'))!).port
  expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200)
  // A key made beside the running server, as the CLI would, and a poll waiting on an inbox.
  const storage = openStorage(join(dir, 'db.sqlite'))
  const cli = { storage, store: createSqliteStore(storage), clock: systemClock }
  const org = await createOrganization(cli, CLI_ACTOR, { name: 'sigterm', preset: 'hosted' })
  const key = (await createApiKey(cli, CLI_ACTOR, { organizationId: org.id })).key
  storage.close()
  const auth = { authorization: `Bearer ${key}` }
  const inbox = (
    (await (await fetch(`http://127.0.0.1:${port}/v1/inboxes`, { method: 'POST', headers: auth })).json()) as {
      data: { id: string }
    }
  ).data
  const poll = fetch(`http://127.0.0.1:${port}/v1/inboxes/${inbox.id}/messages?wait_seconds=60`, {
    headers: auth,
  }).then(
    (response) => `answered ${response.status}`,
    () => 'transport error',
  )
  // The poll is parked in its wait (nothing to match): the child counts it.
  const metrics = async () =>
    (await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: `Bearer ${METRICS}` } })).text()
  await until(async () => /^pigeonhole_long_polls_waiting 1$/m.test(await metrics()), 'the poll to wait in the child', {
    intervalMs: 50,
  })
  child.kill('SIGTERM')
  expect(await poll).toBe('transport error')
  expect(await child.exited).toBe(0)
  for (;;) {
    const { value, done } = await reader.read()
    if (done) break
    out += new TextDecoder().decode(value)
  }
  expect(out).toContain('"event":"long_polls_cut"')
  expect(out).toContain('"event":"stopped"')
  rmSync(dir, { recursive: true, force: true })
}, 20_000) // a child process's start is slow when both cores are busy
