/**
 * The monthly quota is reserved at RCPT TO and released on every path that does not end
 * in a stored message. With LIMIT_MONTHLY_EMAILS=1 a held reservation is visible as a
 * refusal on another connection, and its release as that refusal going away.
 */
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { startTestServer, type TestServer, type Tenant } from '../support/harness.ts'
import { SmtpClient, simpleMessage } from '../support/smtp.ts'
import { until } from '../support/wait.ts'

let server: TestServer
let tenant: Tenant
let address: string
let inboxId: string

beforeEach(async () => {
  server = await startTestServer({ env: { LIMIT_MONTHLY_EMAILS: '1' } })
  tenant = await server.tenant()
  const inbox = (await server.post('/v1/inboxes', tenant.key)).body.data
  address = inbox.address
  inboxId = inbox.id
})
afterEach(() => server.stop())

async function openTransaction(): Promise<SmtpClient> {
  const client = await SmtpClient.connect(server.app.smtpPort)
  await client.command('EHLO test')
  await client.command('MAIL FROM:<a@example.com>')
  expect((await client.command(`RCPT TO:<${address}>`)).code).toBe(250)
  return client
}

/** RCPT on a fresh connection: 250 when the unit is free, 550 quota while it is held. */
async function probe(): Promise<number> {
  const client = await SmtpClient.connect(server.app.smtpPort)
  await client.command('EHLO probe')
  await client.command('MAIL FROM:<p@example.com>')
  const reply = await client.command(`RCPT TO:<${address}>`)
  await client.quit()
  return reply.code
}

/**
 * Makes storing a message fail in the database itself: SQLite's file turns read-only, and a
 * PostgreSQL trigger refuses every new message row (the storing transaction rolls back).
 */
async function refuseStoring(refuse: boolean): Promise<void> {
  if (!server.databaseUrl) {
    server.app.storage!.sqlite.exec(`PRAGMA query_only = ${refuse ? 'ON' : 'OFF'}`)
    return
  }
  if (!refuse) {
    await server.query('drop trigger if exists refuse_messages on messages')
    return
  }
  await server.query(
    `create or replace function refuse_messages() returns trigger language plpgsql as $$ begin raise exception 'storing refused'; end $$`,
  )
  await server.query(
    'create or replace trigger refuse_messages before insert on messages for each row execute function refuse_messages()',
  )
}

/**
 * The unit is free again: a probe's RCPT gets 250. The release is its own write after the
 * reply that ends the transaction (221, 250 to RSET, 4xx/5xx to DATA), so a probe on another
 * machine (the postgres-pair run) can reach the database before it commits; it must come
 * promptly, and until then the probe sees 550.
 */
async function expectReleased(): Promise<void> {
  let code = 0
  await until(
    async () => {
      code = await probe()
      return code !== 550
    },
    'the reservation to be released',
    { timeoutMs: 2_000, intervalMs: 20 },
  )
  expect(code).toBe(250)
}

const received = async () => (await server.get('/v1/usage', tenant.key)).body.emails.received as number
const stored = async () => (await server.get(`/v1/inboxes/${inboxId}/messages`, tenant.key)).body.data.length as number

describe('quota reservation', () => {
  test('is held while a transaction is open', async () => {
    const holder = await openTransaction()
    expect(await probe()).toBe(550)
    await holder.quit()
  })

  test('is released by RSET', async () => {
    const holder = await openTransaction()
    expect((await holder.command('RSET')).code).toBe(250)
    await expectReleased()
    await holder.quit()
  })

  test('is released by QUIT', async () => {
    const holder = await openTransaction()
    await holder.quit()
    await expectReleased()
  })

  test('is released when the connection drops, even mid-DATA', async () => {
    const holder = await openTransaction()
    expect((await holder.command('DATA')).code).toBe(354)
    holder.writeBody('Subject: half\r\n\r\nnever finished')
    holder.destroy()
    // The server learns of the drop asynchronously; it must do so promptly.
    await expectReleased()
    expect(await received()).toBe(0)
    expect(await stored()).toBe(0)
  })

  test('is released when the data is over the size limit', async () => {
    await server.stop()
    server = await startTestServer({ env: { LIMIT_MONTHLY_EMAILS: '1', LIMIT_MESSAGE_BYTES: '2000' } })
    tenant = await server.tenant()
    address = (await server.post('/v1/inboxes', tenant.key)).body.data.address
    const holder = await openTransaction()
    const reply = await holder.data(simpleMessage({ to: address, text: 'x'.repeat(5000) }))
    expect(reply.code).toBe(552)
    await expectReleased()
    expect(await received()).toBe(0)
    await holder.quit()
  })

  test('is released when the message cannot be parsed', async () => {
    const holder = await openTransaction()
    // Deeper MIME nesting than the parser accepts.
    let raw = 'Subject: deep\r\nContent-Type: multipart/mixed; boundary="b0"\r\n\r\n'
    for (let i = 1; i <= 300; i++) raw += `--b${i - 1}\r\nContent-Type: multipart/mixed; boundary="b${i}"\r\n\r\n`
    const reply = await holder.data(raw)
    expect(reply.code).toBe(554)
    expect(reply.text).toContain('could not be parsed')
    await expectReleased()
    expect(await received()).toBe(0)
    expect(await stored()).toBe(0)
    await holder.quit()
  })

  test('is released when a content limit refuses the message', async () => {
    await server.stop()
    server = await startTestServer({ env: { LIMIT_MONTHLY_EMAILS: '1', LIMIT_BODY_BYTES: '10' } })
    tenant = await server.tenant()
    address = (await server.post('/v1/inboxes', tenant.key)).body.data.address
    const holder = await openTransaction()
    expect((await holder.data(simpleMessage({ to: address, text: 'more than ten bytes of text' }))).code).toBe(552)
    await expectReleased()
    await holder.quit()
  })

  test('is released when storing fails, and nothing half-written is visible', async () => {
    const holder = await openTransaction()
    // Make the real database refuse writes, as a full disk or I/O error would.
    await refuseStoring(true)
    const reply = await holder.data(simpleMessage({ to: address }))
    await refuseStoring(false)
    expect(reply.code).toBe(451)
    expect(await received()).toBe(0)
    expect(await stored()).toBe(0)
    await expectReleased()
    // The same connection can deliver once storage works again. The probe above held the one
    // unit for a moment; on two machines its release is its own write after its QUIT, so the
    // recipient may be refused (550) until that lands.
    expect((await holder.command('MAIL FROM:<a@example.com>')).code).toBe(250)
    let recipient = 0
    await until(
      async () => {
        recipient = (await holder.command(`RCPT TO:<${address}>`)).code
        return recipient !== 550
      },
      "the probe's unit to be released",
      { timeoutMs: 2_000, intervalMs: 20 },
    )
    expect(recipient).toBe(250)
    expect((await holder.data(simpleMessage({ to: address }))).code).toBe(250)
    expect(await received()).toBe(1)
    await holder.quit()
  })

  test('turns into exactly one counted email when the message is stored', async () => {
    const holder = await openTransaction()
    expect((await holder.data(simpleMessage({ to: address }))).code).toBe(250)
    expect(await received()).toBe(1)
    expect(await stored()).toBe(1)
    expect(await probe()).toBe(550)
    await holder.quit()
  })
})
