/**
 * downloadAttachment: the bytes that were sent, whatever the transfer encoding; the stored
 * MIME type as Content-Type; a Content-Disposition no filename can break; no caching or
 * sniffing; and download_url on FILES_URL, served by the same route.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createTransport } from 'nodemailer'
import { errorCode, type TestServer, type Tenant } from '../support/harness.ts'
import { BINARY, PDF_NAME, richMessage } from '../support/fixture-mail.ts'
import { asApi, deliver, downloadAttachment, newInbox, startRoomyServer, startWithInbox } from '../support/messages.ts'

let server: TestServer
let tenant: Tenant
let inbox: { id: string; address: string }

beforeAll(async () => {
  ;({ server, tenant, inbox } = await startWithInbox())
})
afterAll(() => server.stop())

const download = (target: TestServer, id: string, key = tenant.key) => downloadAttachment(target, id, key)
/** The parameters of a Content-Disposition value as an RFC 6266 parser sees them (quoted strings respected). */
function dispositionParameters(value: string): Array<[string, string]> {
  expect(value).toMatch(/^attachment(;\s*[^=;\s]+=("(?:[^"\\]|\\.)*"|[^;"\s]*))*$/)
  return [...value.matchAll(/;\s*([^=;\s]+)=("(?:[^"\\]|\\.)*"|[^;"\s]*)/g)].map((m) => [m[1]!, m[2]!])
}

test('a message sent by nodemailer round-trips, attachments byte for byte, with safe download headers', async () => {
  const transport = createTransport({ host: '127.0.0.1', port: server.app.smtpPort, secure: false, ignoreTLS: true })
  const html = '<script>alert(1)</script>'
  const info = await transport.sendMail({
    from: '"Ünïcödé Sender" <u@example.com>',
    to: inbox.address,
    subject: 'nodemailer ✓ €',
    text: 'plain ✓',
    attachments: [
      { filename: PDF_NAME, content: BINARY, contentType: 'application/pdf' },
      { filename: 'x"; filename="evil.exe', content: html, contentType: 'text/html' },
    ],
  })
  expect(info.response).toMatch(/^250 /)
  const [id] = info.response.match(/msg_[0-9a-f]{32}/)!
  const message = (await server.get(`/v1/messages/${id}`, tenant.key)).body.data
  expect(message.subject).toBe('nodemailer ✓ €')
  expect(message.from).toEqual({ name: 'Ünïcödé Sender', address: 'u@example.com' })
  expect(message.attachments.map((a: { filename: string }) => a.filename)).toEqual([PDF_NAME, 'x"; filename="evil.exe'])

  const [pdf, page] = message.attachments
  const pdfResponse = await download(server, pdf.id)
  expect(pdfResponse.status).toBe(200)
  expect(Buffer.from(await pdfResponse.arrayBuffer()).equals(BINARY)).toBe(true)
  expect(pdfResponse.headers.get('content-type')).toBe('application/pdf')
  expect(pdfResponse.headers.get('cache-control')).toBe('private, no-store')
  expect(pdfResponse.headers.get('x-content-type-options')).toBe('nosniff')
  const disposition = pdfResponse.headers.get('content-disposition')!
  expect(dispositionParameters(disposition).map(([name]) => name)).toEqual(['filename', 'filename*'])
  expect(disposition).toMatch(/^[\x20-\x7e]+$/) // header stays ASCII
  const star = /filename\*=UTF-8''([^;\s]+)/.exec(disposition)
  expect(decodeURIComponent(star![1]!)).toBe(PDF_NAME)

  // A hostile filename cannot add parameters, and HTML is served as a download, never sniffed.
  const pageResponse = await download(server, page.id)
  expect(await pageResponse.text()).toBe(html)
  expect(pageResponse.headers.get('content-type')).toStartWith('text/html')
  expect(pageResponse.headers.get('x-content-type-options')).toBe('nosniff')
  const pageDisposition = pageResponse.headers.get('content-disposition')!
  const parameters = dispositionParameters(pageDisposition)
  expect(parameters.map(([name]) => name)).toEqual(['filename', 'filename*'])
  expect(decodeURIComponent(parameters[1]![1].replace(/^UTF-8''/, ''))).toBe('x"; filename="evil.exe')
})

test('attachments download exactly as sent: line-based encodings and calendar invites included', async () => {
  const ics = Buffer.from('BEGIN:VCALENDAR\r\nMETHOD:REQUEST\r\nSUMMARY:Caf\xe9 \xe0 9h\r\nEND:VCALENDAR\r\n', 'latin1')
  const parts: Array<[string, string, string, Buffer]> = [
    // [Content-Type, Content-Transfer-Encoding, encoded body, bytes the download must give]
    ['text/csv', '7bit', 'a,b\r\nc,d', Buffer.from('a,b\r\nc,d')],
    ['text/csv', '7bit', 'a,b\r\nc,d\r\n', Buffer.from('a,b\r\nc,d\r\n')],
    ['text/plain', 'quoted-printable', 'caf=E9=0D=0Aline=\r\n two', Buffer.from('caf\xe9\r\nline two', 'latin1')],
    ['text/calendar; charset=iso-8859-1; method=REQUEST', 'base64', ics.toString('base64'), ics],
    ['application/octet-stream', 'base64', BINARY.toString('base64'), BINARY],
  ]
  const raw = [
    'From: files@example.com',
    'Subject: exact bytes',
    'Content-Type: multipart/mixed; boundary="b"',
    '',
    '--b',
    'Content-Type: text/plain',
    '',
    'see attached',
    ...parts.flatMap(([type, encoding, body], i) => [
      '--b',
      `Content-Type: ${type}`,
      `Content-Transfer-Encoding: ${encoding}`,
      `Content-Disposition: attachment; filename="part-${i}"`,
      '',
      body,
    ]),
    '--b--',
    '',
  ].join('\r\n')
  const [id] = await deliver(server, inbox.address, Buffer.from(raw, 'latin1'))
  const attachments = (await server.get(`/v1/messages/${id}`, tenant.key)).body.data.attachments
  expect(attachments).toHaveLength(parts.length)
  for (const [i, [type, encoding, , expected]] of parts.entries()) {
    const response = await download(server, attachments[i].id)
    const bytes = Buffer.from(await response.arrayBuffer())
    expect({ type, encoding, bytes: bytes.toString('latin1') }).toEqual({
      type,
      encoding,
      bytes: expected.toString('latin1'),
    })
    expect(attachments[i].size_bytes).toBe(expected.byteLength)
  }
})

describe('FILES_URL', () => {
  test('download_url uses FILES_URL, and the same path answers on the API host', async () => {
    const files = await startRoomyServer({ env: { FILES_URL: 'https://files.example.test/' } })
    try {
      const owner = await files.tenant()
      const box = await newInbox(files, owner.key)
      const [id] = await deliver(files, box.address, richMessage(box.address))
      const pdf = (await files.get(`/v1/messages/${id}`, owner.key)).body.data.attachments[1]
      expect(pdf.download_url).toBe(`https://files.example.test/v1/attachments/${pdf.id}`)
      const url = new URL(pdf.download_url)
      const response = await fetch(`${files.url}${url.pathname}`, { headers: { authorization: `Bearer ${owner.key}` } })
      expect(response.status).toBe(200)
      expect(Buffer.from(await response.arrayBuffer()).equals(BINARY)).toBe(true)
      // Same authentication as the API.
      const anonymous = await asApi(await fetch(`${files.url}${url.pathname}`))
      expect(anonymous.status).toBe(401)
      expect(errorCode(anonymous)).toBe('invalid_api_key')
    } finally {
      await files.stop()
    }
  })
})
