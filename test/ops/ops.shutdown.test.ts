/**
 * Graceful stop: waiting long polls answer 204, a message in DATA still completes with
 * 250 and is on disk afterwards, new connections are refused, the database closes cleanly.
 */
import { expect, setDefaultTimeout, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { connect } from 'node:net'
import { startTestServer } from '../support/harness.ts'
import { newInbox, principalOf, startRoomyServer, until } from '../support/messages.ts'
import { SmtpClient, simpleMessage } from '../support/smtp.ts'
import { scratchDir } from '../support/scratch.ts'

// A hang's deadline, not a speed: on a busy machine this file's servers, processes or
// generated cases take well over Bun's default of 5 s.
setDefaultTimeout(30_000)

test('stop drains in-flight work and refuses new work', async () => {
  const server = await startTestServer()
  const tenant = server.tenant()
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
  const polled = await poll
  expect(polled.status).toBe(204)
  expect(polled.text).toBe('')

  client.socket.write('\r\n.\r\n')
  const reply = await client.next()
  expect(reply.code).toBe(250)
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

test('stopping the server answers every waiting poll with 204', async () => {
  const own = await startRoomyServer()
  const tenant = own.tenant()
  const inbox = await newInbox(own, tenant.key)
  const polls = Array.from({ length: 3 }, () => fetch(`${own.url}/v1/inboxes/${inbox.id}/messages?wait_seconds=120`, { headers: { authorization: `Bearer ${tenant.key}` } }))
  await until(() => own.app.services.longPolls.count(principalOf(tenant.key, tenant.organizationId)).key === 3, 'the polls to wait')
  const stopped = own.stop()
  for (const poll of polls) {
    const response = await poll
    expect(response.status).toBe(204)
    expect(await response.text()).toBe('')
  }
  await stopped
})

test('bun run start stops cleanly on SIGTERM', async () => {
  const { rmSync } = await import('node:fs')
  const { join } = await import('node:path')
  const dir = scratchDir('pigeonhole-sigterm-')
  const child = Bun.spawn(['bun', join(import.meta.dir, '..', '..', 'src', 'index.ts')], {
    env: { ...process.env, PORT: '0', SMTP_PORT: '0', HOST: '127.0.0.1', DATABASE_PATH: join(dir, 'db.sqlite') },
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
  child.kill('SIGTERM')
  expect(await child.exited).toBe(0)
  for (;;) {
    const { value, done } = await reader.read()
    if (done) break
    out += new TextDecoder().decode(value)
  }
  expect(out).toContain('"event":"stopped"')
  rmSync(dir, { recursive: true, force: true })
})
