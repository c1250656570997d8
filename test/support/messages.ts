/**
 * Shared steps of the message tests: a server with the inbound and request limits raised
 * (these tests are about reading messages, not about limits; the SMTP tests cover those),
 * an inbox, and delivering mail over real SMTP with the 250 checked.
 */
import { expect } from 'bun:test'
import { Database } from 'bun:sqlite'
import type { Clock } from '../../src/clock.ts'
import type { Principal } from '../../src/core/api-keys/authenticate.ts'
import type { Inbox } from '../../src/core/common/models.ts'
import { startTestServer, type ApiResponse, type Tenant, type TestServer } from './harness.ts'
import { SmtpClient, sendMail, type Reply } from './smtp.ts'

export const ROOMY_LIMITS: Record<string, string> = {
  LIMIT_MONTHLY_EMAILS: '100000',
  LIMIT_INBOX_BURST: '100000',
  LIMIT_ORG_BURST: '100000',
  LIMIT_REQUESTS_PER_KEY: '100000',
  LIMIT_REQUESTS_PER_ORG: '100000',
  LIMIT_ACTIVE_INBOXES: '1000',
}

export const startRoomyServer = (options: { clock?: Clock; env?: Record<string, string> } = {}) =>
  startTestServer({ clock: options.clock, env: { ...ROOMY_LIMITS, ...options.env } })

export const SUMMARY_FIELDS = [
  'expires_at',
  'from',
  'id',
  'inbox_id',
  'preview',
  'received_at',
  'size_bytes',
  'subject',
  'to',
]
export const CONTENT_FIELDS = ['attachments', 'headers', 'html', 'internet_message_id', 'text']

export async function newInbox(server: TestServer, key: string, prefix?: string): Promise<Inbox> {
  const response = await server.post('/v1/inboxes', key, prefix ? { prefix } : undefined)
  expect(response.status).toBe(201)
  return response.body.data
}

/** The principal the server sees for a key (for services.longPolls.count). */
export const principalOf = (
  key: string,
  organizationId: string,
): Pick<Principal, 'organizationId' | 'keyPublicId'> => ({
  organizationId,
  keyPublicId: key.slice('ph_live_'.length, 'ph_live_'.length + 16),
})

/** Sends one message and expects 250; returns the stored message ids named in the reply. */
export async function deliver(
  server: TestServer,
  to: string | string[],
  raw: string | Buffer,
  from = 'sender@example.com',
): Promise<string[]> {
  const result = await sendMail(server.app.smtpPort, { from, to: Array.isArray(to) ? to : [to] }, raw)
  expect(result.data?.code).toBe(250)
  return result.data!.text.match(/msg_[0-9a-f]{32}/g) ?? []
}

/**
 * DATA with exact bytes (no line-ending rewriting), for hostile input. The bytes must not
 * contain a line that starts with '.'; the terminator is added here.
 */
export async function sendRawBytes(
  port: number,
  to: string,
  bytes: Buffer,
  from = 'sender@example.com',
): Promise<Reply> {
  const client = await SmtpClient.connect(port)
  client.socket.setNoDelay(true)
  try {
    expect((await client.command('EHLO hostile.test')).code).toBe(250)
    expect((await client.command(`MAIL FROM:<${from}>`)).code).toBe(250)
    expect((await client.command(`RCPT TO:<${to}>`)).code).toBe(250)
    expect((await client.command('DATA')).code).toBe(354)
    // An empty message is the final dot right away; otherwise the CRLF before it belongs to the message.
    client.socket.write(bytes.byteLength === 0 ? '.\r\n' : Buffer.concat([bytes, Buffer.from('\r\n.\r\n')]))
    return await client.next()
  } finally {
    await client.quit()
  }
}

/** Opens the server's SQLite file read-only, as an operator with sqlite3 would. */
export function countRows(databasePath: string, sql: string, ...params: string[]): number {
  const db = new Database(databasePath, { readonly: true })
  try {
    return (db.query(sql).get(...params) as { n: number }).n
  } finally {
    db.close()
  }
}

export const sortedKeys = (value: object): string[] => Object.keys(value).sort()

/** A fetch Response read like the harness reads its own (for errorCode). */
export async function asApi(response: Response): Promise<ApiResponse> {
  const text = await response.text()
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined, text }
}

/** GET /v1/attachments/{id} on `server` with `key`, as the raw fetch Response (bytes and headers matter). */
export const downloadAttachment = (server: TestServer, id: string, key: string) =>
  fetch(`${server.url}/v1/attachments/${id}`, { headers: { authorization: `Bearer ${key}` } })

/** A roomy server with one tenant and one inbox, shared by the tests of one file. */
export async function startWithInbox(
  env: Record<string, string> = {},
): Promise<{ server: TestServer; tenant: Tenant; inbox: Inbox }> {
  const server = await startRoomyServer({ env })
  const tenant = await server.tenant()
  return { server, tenant, inbox: await newInbox(server, tenant.key) }
}
