/**
 * getMessage, deleteMessage and deleteInbox over real SMTP and HTTP: every content field,
 * bytes gone from the SQLite file after deletion, and foreign ids that answer exactly like
 * unknown ids.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { errorCode, type TestServer, type Tenant } from '../support/harness.ts'
import { simpleMessage } from '../support/smtp.ts'
import { BINARY, PDF_NAME, PNG, richMessage } from '../support/fixture-mail.ts'
import {
  CONTENT_FIELDS,
  SUMMARY_FIELDS,
  asApi,
  deliver,
  downloadAttachment,
  newInbox,
  sortedKeys,
  startWithInbox,
} from '../support/messages.ts'

let server: TestServer
let tenant: Tenant
let inbox: { id: string; address: string }

beforeAll(async () => {
  ;({ server, tenant, inbox } = await startWithInbox())
})
afterAll(() => server.stop())

const download = (target: TestServer, id: string, key = tenant.key) => downloadAttachment(target, id, key)

describe('getMessage', () => {
  test('returns every field: decoded from, subject and bodies, headers in order with duplicates, attachments', async () => {
    const raw = richMessage(inbox.address)
    const [id] = await deliver(server, inbox.address, raw)
    const response = await server.get(`/v1/messages/${id}`, tenant.key)
    expect(response.status).toBe(200)
    const message = response.body.data
    expect(sortedKeys(message)).toEqual([...SUMMARY_FIELDS, ...CONTENT_FIELDS].sort())
    expect(message).toMatchObject({
      id,
      inbox_id: inbox.id,
      from: { name: 'Zürich Team', address: 'team@zurich.example' },
      to: inbox.address,
      subject: 'Grüße aus Zürich',
      preview: 'Hallo Zürich, your code is 4711.',
      size_bytes: Buffer.byteLength(raw), // raw ends with CRLF, so the client sends it as is before the final dot
      internet_message_id: '<abc.123@zurich.example>',
      text: 'Hallo Zürich, your code is 4711.\n',
      html: '<p>Hallo <b>Zürich</b><img src="cid:logo@zurich"></p>\n',
    })
    expect(Date.parse(message.expires_at) - Date.parse(message.received_at)).toBe(30 * 86_400_000)
    // Header values as received on the wire (encoded words are not decoded here).
    expect(message.headers).toEqual([
      ['Received', 'from relay.example by mx.inbox.test; Tue, 10 Mar 2026 08:00:01 +0000'],
      ['Received', 'from client.example by relay.example; Tue, 10 Mar 2026 08:00:00 +0000'],
      ['From', '=?UTF-8?Q?Z=C3=BCrich_Team?= <team@zurich.example>'],
      ['To', `Test Inbox <${inbox.address}>`],
      ['Subject', '=?ISO-8859-1?Q?Gr=FC=DFe?= aus =?UTF-8?B?WsO8cmljaA==?='],
      ['Message-ID', '<abc.123@zurich.example>'],
      ['X-Dup', 'one'],
      ['X-Dup', 'two'],
      ['MIME-Version', '1.0'],
      ['Content-Type', 'multipart/mixed; boundary="outer"'],
    ])
    const [logo, pdf] = message.attachments
    expect(message.attachments).toHaveLength(2)
    expect(logo).toEqual({
      id: expect.stringMatching(/^att_[0-9a-f]{32}$/),
      filename: 'logo.png',
      content_type: 'image/png',
      size_bytes: PNG.byteLength,
      disposition: 'inline',
      content_id: 'logo@zurich',
      download_url: `${server.app.publicUrls.filesUrl}/v1/attachments/${logo.id}`,
    })
    expect(pdf).toEqual({
      id: expect.stringMatching(/^att_[0-9a-f]{32}$/),
      filename: PDF_NAME,
      content_type: 'application/pdf',
      size_bytes: BINARY.byteLength,
      disposition: 'attachment',
      content_id: null,
      download_url: `${server.app.publicUrls.filesUrl}/v1/attachments/${pdf.id}`,
    })
  })
})

describe('deletion', () => {
  const rows = (sql: string, ...params: string[]) => server.countRows(sql, ...params)

  test('deleteMessage answers 204, then the message, its attachments and their bytes are gone', async () => {
    const [id] = await deliver(server, inbox.address, richMessage(inbox.address))
    const attachmentIds: string[] = (await server.get(`/v1/messages/${id}`, tenant.key)).body.data.attachments.map(
      (a: { id: string }) => a.id,
    )
    expect(await rows('SELECT count(*) AS n FROM message_sources WHERE message_id = ?', id!)).toBe(1)
    expect(
      await rows('SELECT count(*) AS n FROM attachment_contents WHERE attachment_id IN (?, ?)', ...attachmentIds),
    ).toBe(2)

    const deleted = await server.delete(`/v1/messages/${id}`, tenant.key)
    expect(deleted.status).toBe(204)
    expect(deleted.text).toBe('')
    for (const method of ['GET', 'DELETE']) {
      const again = await server.request(method, `/v1/messages/${id}`, { key: tenant.key })
      expect(again.status).toBe(404)
      expect(errorCode(again)).toBe('message_not_found')
    }
    for (const attachmentId of attachmentIds) {
      const gone = await asApi(await download(server, attachmentId))
      expect(gone.status).toBe(404)
      expect(errorCode(gone)).toBe('attachment_not_found')
    }
    expect(await rows('SELECT count(*) AS n FROM messages WHERE id = ?', id!)).toBe(0)
    expect(await rows('SELECT count(*) AS n FROM message_sources WHERE message_id = ?', id!)).toBe(0)
    expect(await rows('SELECT count(*) AS n FROM attachments WHERE message_id = ?', id!)).toBe(0)
    expect(
      await rows('SELECT count(*) AS n FROM attachment_contents WHERE attachment_id IN (?, ?)', ...attachmentIds),
    ).toBe(0)
    // It is gone from the listing too.
    const listed = (await server.get(`/v1/inboxes/${inbox.id}/messages?limit=100`, tenant.key)).body.data.map(
      (m: { id: string }) => m.id,
    )
    expect(listed).not.toContain(id)
  })

  test('deleteInbox removes its messages and their bytes, and leaves other inboxes alone', async () => {
    const doomed = await newInbox(server, tenant.key)
    const kept = await newInbox(server, tenant.key)
    const ids = await deliver(server, [doomed.address, kept.address], richMessage(doomed.address))
    const [doomedId, keptId] = ids
    const count = (table: string, column: string, inboxId: string) =>
      rows(
        `SELECT count(*) AS n FROM ${table} WHERE ${column} IN (SELECT a.id FROM ${table === 'attachment_contents' ? 'attachments a JOIN messages m ON a.message_id = m.id' : 'messages a'} WHERE ${table === 'attachment_contents' ? 'm' : 'a'}.inbox_id = ?)`,
        inboxId,
      )
    expect(await count('message_sources', 'message_id', doomed.id)).toBe(1)
    expect(await count('attachment_contents', 'attachment_id', doomed.id)).toBe(2)
    const usageBefore = (await server.get('/v1/usage', tenant.key)).body.emails.received

    expect((await server.delete(`/v1/inboxes/${doomed.id}`, tenant.key)).status).toBe(204)
    expect(await rows('SELECT count(*) AS n FROM messages WHERE inbox_id = ?', doomed.id)).toBe(0)
    expect(await rows('SELECT count(*) AS n FROM message_sources WHERE message_id = ?', doomedId!)).toBe(0)
    expect(await rows('SELECT count(*) AS n FROM attachments WHERE message_id = ?', doomedId!)).toBe(0)
    expect(
      await rows(
        'SELECT count(*) AS n FROM attachment_contents WHERE attachment_id NOT IN (SELECT id FROM attachments)',
      ),
    ).toBe(0)
    expect(errorCode(await server.get(`/v1/messages/${doomedId}`, tenant.key))).toBe('message_not_found')
    // The copy in the other inbox is untouched, bytes included.
    expect((await server.get(`/v1/messages/${keptId}`, tenant.key)).status).toBe(200)
    expect(await count('attachment_contents', 'attachment_id', kept.id)).toBe(2)
    // Usage counts what arrived, not what is left.
    expect((await server.get('/v1/usage', tenant.key)).body.emails.received).toBe(usageBefore)
  })
})

describe('plain messages', () => {
  test('a text-only message has html null and no attachments; an html-only one gets a preview from its html', async () => {
    const [textId] = await deliver(server, inbox.address, simpleMessage({ to: inbox.address, text: 'just text' }))
    const text = (await server.get(`/v1/messages/${textId}`, tenant.key)).body.data
    expect([text.html, text.attachments, text.preview]).toEqual([null, [], 'just text'])
    const htmlOnly = simpleMessage({
      to: inbox.address,
      text: '<style>p{}</style><p>Hi &amp; <b>welcome</b></p>',
    }).replace('text/plain', 'text/html')
    const [htmlId] = await deliver(server, inbox.address, htmlOnly)
    const html = (await server.get(`/v1/messages/${htmlId}`, tenant.key)).body.data
    expect(html.text).toBeNull()
    expect(html.preview).toBe('Hi & welcome')
  })
})
