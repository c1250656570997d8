/** STARTTLS on the SMTP listener with the self-signed certificate made on first start. */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { X509Certificate } from 'node:crypto'
import { readFileSync, statSync } from 'node:fs'
import nodemailer from 'nodemailer'
import { selfSignedPaths } from '../../src/smtp/self-signed.ts'
import { newInbox, startRoomyServer } from '../support/messages.ts'
import type { Tenant, TestServer } from '../support/harness.ts'
import { SmtpClient, simpleMessage } from '../support/smtp.ts'
import { plainSession, startTls } from '../support/starttls-client.ts'
import { testNeeding } from '../support/tools.ts'
import { until } from '../support/wait.ts'

// A hang's deadline, not a speed: on a busy machine this file's servers, processes or
// generated cases take well over Bun's default of 5 s.
setDefaultTimeout(30_000)

let server: TestServer
let tenant: Tenant

beforeAll(async () => {
  server = await startRoomyServer()
  tenant = await server.tenant()
})
afterAll(() => server.stop())

const rawSource = (messageId: string) => {
  const db = new Database(server.databasePath, { readonly: true })
  try {
    return (db.query('SELECT raw FROM message_sources WHERE message_id = ?').get(messageId) as { raw: Uint8Array }).raw
  } finally {
    db.close()
  }
}

describe('STARTTLS', () => {
  test('EHLO advertises STARTTLS; the handshake is TLS 1.2 or newer with a certificate for the receiving domain', async () => {
    const { ehlo, reader } = await plainSession(server.app.smtpPort)
    expect(ehlo.text.split('\n')).toContain('STARTTLS')
    await reader.command('QUIT')
    const { tls, reader: secure } = await startTls(server.app.smtpPort)
    expect(['TLSv1.2', 'TLSv1.3']).toContain(tls.getProtocol()!)
    const cert = new X509Certificate(tls.getPeerX509Certificate()!.raw)
    expect(cert.checkHost('inbox.test')).toBe('inbox.test')
    // The first EHLO after the handshake starts a fresh session (RFC 3207) and no longer offers STARTTLS.
    const again = await secure.command('EHLO client.test')
    expect(again.code).toBe(250)
    expect(again.text).not.toContain('STARTTLS')
    tls.destroy()
  })

  test('the self-signed certificate is kept beside the database, its key readable by the owner only', () => {
    const paths = selfSignedPaths(server.databasePath)
    expect(statSync(paths.key).mode & 0o077).toBe(0)
    expect(new X509Certificate(readFileSync(paths.cert)).checkHost('inbox.test')).toBe('inbox.test')
  })

  test('TLS 1.1 and older are refused', async () => {
    await expect(startTls(server.app.smtpPort, { maxVersion: 'TLSv1.1', minVersion: 'TLSv1' })).rejects.toThrow()
  })

  test('nodemailer with requireTLS delivers, and the message is stored', async () => {
    const inbox = await newInbox(server, tenant.key)
    const transport = nodemailer.createTransport({
      host: '127.0.0.1',
      port: server.app.smtpPort,
      secure: false,
      requireTLS: true,
      tls: { rejectUnauthorized: false },
    })
    const info = await transport.sendMail({
      from: 'app@example.com',
      to: inbox.address,
      subject: 'Over TLS',
      text: 'Your code is 424242',
    })
    expect(info.response).toMatch(/^250 Message stored as msg_[0-9a-f]{32}$/)
    const list = await server.get(`/v1/inboxes/${inbox.id}/messages?limit=1&include=content`, tenant.key)
    expect(list.body.data[0].subject).toBe('Over TLS')
    expect(list.body.data[0].text.trim()).toBe('Your code is 424242')
  })

  testNeeding('python3')("Python's smtplib starttls() delivers", async () => {
    const inbox = await newInbox(server, tenant.key)
    const script = [
      'import smtplib, ssl, sys',
      'ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE',
      's = smtplib.SMTP("127.0.0.1", int(sys.argv[1]), timeout=20)',
      's.ehlo(); s.starttls(context=ctx); s.ehlo()',
      'msg = "From: py@example.com\\r\\nTo: %s\\r\\nSubject: From Python\\r\\n\\r\\nhello from smtplib\\r\\n" % sys.argv[2]',
      'code, text = s.data(msg) if s.mail("py@example.com")[0] == 250 and s.rcpt(sys.argv[2])[0] == 250 else (0, b"refused")',
      'print(code, text.decode(), s.sock.version()); s.quit()',
    ].join('\n')
    const child = Bun.spawn(['python3', '-c', script, String(server.app.smtpPort), inbox.address], {
      stdout: 'pipe',
      stderr: 'pipe',
    })
    const [out, err, exit] = await Promise.all([
      new Response(child.stdout).text(),
      new Response(child.stderr).text(),
      child.exited,
    ])
    expect(err).toBe('')
    expect(exit).toBe(0)
    expect(out).toMatch(/^250 Message stored as msg_[0-9a-f]{32} TLSv1\.[23]\n$/)
    const list = await server.get(`/v1/inboxes/${inbox.id}/messages`, tenant.key)
    expect(list.body.data.map((m: { subject: string }) => m.subject)).toEqual(['From Python'])
  })

  test('a message over TLS is stored exactly as the same bytes over plain SMTP', async () => {
    const inbox = await newInbox(server, tenant.key)
    const raw =
      simpleMessage({ to: inbox.address, subject: 'Same bytes', text: 'Line one\r\n..leading dot\r\nünïcode' }) + '\r\n'
    const plain = await SmtpClient.connect(server.app.smtpPort)
    await plain.command('EHLO plain.test')
    const overPlain = await plain.transaction({ to: [inbox.address] }, raw)
    await plain.quit()

    const { reader, tls } = await startTls(server.app.smtpPort)
    await reader.command('EHLO secure.test')
    expect((await reader.command('MAIL FROM:<sender@example.com>')).code).toBe(250)
    expect((await reader.command(`RCPT TO:<${inbox.address}>`)).code).toBe(250)
    expect((await reader.command('DATA')).code).toBe(354)
    tls.write(Buffer.from(raw.replace(/^\./gm, '..') + '.\r\n', 'utf8'))
    const overTls = await reader.next()
    tls.destroy()

    const [plainId] = overPlain.data!.text.match(/msg_[0-9a-f]{32}/)!
    const [tlsId] = overTls.text.match(/msg_[0-9a-f]{32}/)!
    expect(Buffer.from(rawSource(tlsId!)).equals(Buffer.from(rawSource(plainId!)))).toBe(true)
    const [a, b] = await Promise.all([
      server.get(`/v1/messages/${plainId}`, tenant.key),
      server.get(`/v1/messages/${tlsId}`, tenant.key),
    ])
    const comparable = ({ id, received_at, expires_at, ...rest }: Record<string, unknown>) => rest
    expect(comparable(b.body.data)).toEqual(comparable(a.body.data))
  })

  test('a bad handshake closes that connection only; its held recipient is released and the listener keeps serving', async () => {
    const inbox = await newInbox(server, tenant.key)
    const reservations = server.app.services.reservations
    const held = reservations.size
    const logsBefore = server.logs.length
    const { reader, socket } = await plainSession(server.app.smtpPort)
    expect((await reader.command('MAIL FROM:<sender@example.com>')).code).toBe(250)
    expect((await reader.command(`RCPT TO:<${inbox.address}>`)).code).toBe(250)
    expect(reservations.size).toBe(held + 1)
    expect((await reader.command('STARTTLS')).code).toBe(220)
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
    socket.write('this is not a TLS client hello\r\n'.repeat(20))
    await closed
    const failed = () => server.logs.slice(logsBefore).some((line) => line.event === 'smtp_tls_failed')
    await until(
      () => reservations.size === held && failed(),
      'the failed handshake to be logged and its reservation released',
    )
    const loud = server.logs.slice(logsBefore).filter((line) => line.level === 'error' || line.level === 'warn')
    expect(loud.map((line) => line.event)).toEqual(['smtp_tls_failed'])
    expect(loud[0]!.stack).toBeUndefined()
    // The listener still serves plain and TLS sessions.
    const { tls } = await startTls(server.app.smtpPort)
    tls.destroy()
    const after = await SmtpClient.connect(server.app.smtpPort)
    expect((await after.command('EHLO after.test')).code).toBe(250)
    await after.quit()
  })
})

describe('SMTP_REQUIRE_TLS=true', () => {
  let strict: TestServer
  beforeAll(async () => {
    strict = await startRoomyServer({ env: { SMTP_REQUIRE_TLS: 'true' } })
  })
  afterAll(() => strict.stop())

  test('MAIL FROM before STARTTLS answers 530; after the handshake it is accepted', async () => {
    const { reader } = await plainSession(strict.app.smtpPort)
    const refused = await reader.command('MAIL FROM:<sender@example.com>')
    expect(refused.code).toBe(530)
    expect(refused.text).toContain('Must issue a STARTTLS command first')
    await reader.command('QUIT')
    const { reader: secure, tls } = await startTls(strict.app.smtpPort)
    await secure.command('EHLO secure.test')
    expect((await secure.command('MAIL FROM:<sender@example.com>')).code).toBe(250)
    tls.destroy()
  })
})
