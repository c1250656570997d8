/**
 * Stored bytes are verified when served: raw sources and attachments carry a SHA-256
 * written with them; one flipped bit on disk answers 500 internal_error (the error
 * envelope; a 500 page in the console) with one error line and a metric, never the wrong
 * bytes. Rows from before the hashes existed (sha256 null) are still served.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createHash, randomBytes } from 'node:crypto'
import { setUp } from '../support/console-client.ts'
import type { ApiResponse, TestServer } from '../support/harness.ts'
import { BINARY, PNG, richMessage } from '../support/fixture-mail.ts'
import { deliver, downloadAttachment, newInbox, startRoomyServer } from '../support/messages.ts'
import { expectError } from '../support/shapes.ts'
import { simpleMessage } from '../support/smtp.ts'

const TOKEN = 'metrics-token-0123456789abcdef'
let server: TestServer
let key: string
let organizationId: string
let cookie: string

beforeAll(async () => {
  server = await startRoomyServer({ env: { METRICS_TOKEN: TOKEN } })
  const operator = await setUp(server)
  key = operator.key
  organizationId = operator.organizationId
  cookie = [...operator.client.cookies].map(([name, value]) => `${name}=${value}`).join('; ')
})
afterAll(() => server.stop())

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')
const corruptLines = () => server.logs.filter((line) => line.event === 'stored_bytes_corrupt')

/** The metric summed over every machine behind `server.url`: /metrics counts what its own machine served. */
async function corruptCount(kind: string): Promise<number> {
  let total = 0
  for (const machine of server.machines) {
    const text = await (
      await fetch(`${machine.httpUrl}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })
    ).text()
    total += Number(
      new RegExp(`^pigeonhole_stored_bytes_corrupt_total\\{kind="${kind}"\\} (\\d+)$`, 'm').exec(text)?.[1],
    )
  }
  return total
}

/** Flips the lowest bit of one byte in the middle of a stored blob, as a bad sector or a bad restore would. */
async function flipOneBit(table: string, column: string, idColumn: string, id: string): Promise<void> {
  const [row] = (await server.query(`SELECT ${column} AS bytes FROM ${table} WHERE ${idColumn} = ?`, id)) as {
    bytes: Uint8Array
  }[]
  const bytes = Buffer.from(row!.bytes)
  bytes[bytes.length >> 1]! ^= 1
  await server.query(`UPDATE ${table} SET ${column} = ? WHERE ${idColumn} = ?`, bytes, id)
}

async function storedRichMessage(): Promise<{ messageId: string; attachmentId: string }> {
  const inbox = await newInbox(server, key)
  const [messageId] = await deliver(server, inbox.address, richMessage(inbox.address))
  const message = (await server.get(`/v1/messages/${messageId}`, key)).body.data
  const attachment = message.attachments.find((a: { size_bytes: number }) => a.size_bytes === BINARY.length)
  return { messageId: messageId!, attachmentId: attachment.id }
}

const asApi = async (response: Response): Promise<ApiResponse> => {
  const text = await response.text()
  return { status: response.status, headers: response.headers, body: JSON.parse(text), text }
}

test('every stored source and attachment carries the SHA-256 of its bytes, parsed on the event loop or in a worker', async () => {
  const inbox = await newInbox(server, key)
  const [small] = await deliver(
    server,
    inbox.address,
    simpleMessage({ to: inbox.address, subject: 'small, parsed on the event loop' }),
  )
  const { messageId } = await storedRichMessage()
  for (const id of [small!, messageId]) {
    const [row] = (await server.query('SELECT raw, sha256 FROM message_sources WHERE message_id = ?', id)) as {
      raw: Uint8Array
      sha256: string
    }[]
    expect(row!.sha256).toBe(sha256(row!.raw))
  }
  const attachments = (await server.query(
    'SELECT c.content, c.sha256 FROM attachment_contents c JOIN attachments a ON a.id = c.attachment_id WHERE a.message_id = ?',
    messageId,
  )) as Array<{
    content: Uint8Array
    sha256: string
  }>
  expect(attachments.length).toBe(2)
  for (const row of attachments) expect(row.sha256).toBe(sha256(row.content))
})

test('one flipped bit in an attachment: 500 internal_error, one error line, the metric; never the wrong bytes', async () => {
  const { attachmentId } = await storedRichMessage()
  const intact = await downloadAttachment(server, attachmentId, key)
  expect(intact.status).toBe(200)
  expect(Buffer.from(await intact.arrayBuffer()).equals(BINARY)).toBe(true)
  const before = { lines: corruptLines().length, metric: await corruptCount('attachment') }

  await flipOneBit('attachment_contents', 'content', 'attachment_id', attachmentId)
  const refused = await asApi(await downloadAttachment(server, attachmentId, key))
  expectError(refused, 500, 'internal_error')
  expect(corruptLines().length).toBe(before.lines + 1)
  expect(corruptLines().at(-1)).toMatchObject({
    level: 'error',
    kind: 'attachment',
    id: attachmentId,
    size_bytes: BINARY.length,
    expected_sha256: sha256(BINARY),
  })
  expect(await corruptCount('attachment')).toBe(before.metric + 1)
  // No stack trace or second error line for it.
  expect(server.logs.filter((line) => line.level === 'error').length).toBe(corruptLines().length)

  // The console's download refuses the same bytes.
  const inConsole = await fetch(`${server.url}/console/orgs/${organizationId}/attachments/${attachmentId}`, {
    headers: { cookie },
  })
  expect(inConsole.status).toBe(500)
  expect(Buffer.from(await inConsole.arrayBuffer()).includes(BINARY.subarray(0, 64))).toBe(false)
})

test('one flipped bit in a raw source: the console .eml download answers 500 and logs it once', async () => {
  const { messageId } = await storedRichMessage()
  const path = `/console/orgs/${organizationId}/messages/${messageId}/raw`
  expect((await fetch(`${server.url}${path}`, { headers: { cookie } })).status).toBe(200)
  const before = { lines: corruptLines().length, metric: await corruptCount('message_source') }

  await flipOneBit('message_sources', 'raw', 'message_id', messageId)
  const refused = await fetch(`${server.url}${path}`, { headers: { cookie } })
  expect(refused.status).toBe(500)
  expect(refused.headers.get('content-type')).toContain('text/html')
  expect(corruptLines().length).toBe(before.lines + 1)
  expect(corruptLines().at(-1)).toMatchObject({ kind: 'message_source', id: messageId })
  expect(await corruptCount('message_source')).toBe(before.metric + 1)
  expect(server.logs.filter((line) => line.event === 'console_error')).toEqual([])
})

test("a corrupt inline image leaves the console's message view up, with that image broken instead of wrong", async () => {
  const { messageId } = await storedRichMessage()
  const view = () =>
    fetch(`${server.url}/console/orgs/${organizationId}/messages/${messageId}/html`, { headers: { cookie } })
  const intact = await (await view()).text()
  expect(intact).toContain(`data:image/png;base64,${PNG.toString('base64')}`)
  const [image] = (await server.query(
    "SELECT a.id FROM attachments a WHERE a.message_id = ? AND a.content_id = 'logo@zurich'",
    messageId,
  )) as { id: string }[]
  const before = corruptLines().length

  await flipOneBit('attachment_contents', 'content', 'attachment_id', image!.id)
  const shown = await view()
  expect(shown.status).toBe(200)
  const html = await shown.text()
  expect(html).toContain('cid:logo@zurich')
  expect(html).not.toContain('data:image/png;base64,')
  expect(corruptLines().length).toBe(before + 1)
  expect(corruptLines().at(-1)).toMatchObject({ kind: 'attachment', id: image!.id })
})

test('rows stored before the hashes existed (sha256 null) are served as they are', async () => {
  const { messageId, attachmentId } = await storedRichMessage()
  await server.query('UPDATE attachment_contents SET sha256 = NULL WHERE attachment_id = ?', attachmentId)
  await server.query('UPDATE message_sources SET sha256 = NULL WHERE message_id = ?', messageId)
  const file = await downloadAttachment(server, attachmentId, key)
  expect(file.status).toBe(200)
  expect(Buffer.from(await file.arrayBuffer()).equals(BINARY)).toBe(true)
  expect(
    (await fetch(`${server.url}/console/orgs/${organizationId}/messages/${messageId}/raw`, { headers: { cookie } }))
      .status,
  ).toBe(200)
})

test('large bytes (read in slices on PostgreSQL, hashed off the event loop) are served whole, and one flipped bit in them is refused', async () => {
  // Sizes around PostgreSQL's 512 KiB read slice: exactly one, and several with a short last one.
  const files = [randomBytes(512 * 1024), randomBytes(1300 * 1024 + 7)]
  const inbox = await newInbox(server, key)
  const raw = [
    'From: sender@example.com',
    `To: ${inbox.address}`,
    'Subject: large attachments',
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="big"',
    '',
    ...files.flatMap((file, i) => [
      '--big',
      'Content-Type: application/octet-stream',
      `Content-Disposition: attachment; filename="f${i}.bin"`,
      'Content-Transfer-Encoding: base64',
      '',
      file.toString('base64').replace(/.{76}/g, '$&\r\n'),
    ]),
    '--big--',
    '',
  ].join('\r\n')
  const [messageId] = await deliver(server, inbox.address, raw)
  const message = (await server.get(`/v1/messages/${messageId}`, key)).body.data
  const ids = files.map(
    (file) => message.attachments.find((a: { size_bytes: number }) => a.size_bytes === file.length).id as string,
  )
  for (const [i, id] of ids.entries()) {
    const served = await downloadAttachment(server, id, key)
    expect(served.status).toBe(200)
    expect(Buffer.from(await served.arrayBuffer()).equals(files[i]!)).toBe(true)
  }
  const source = await fetch(`${server.url}/console/orgs/${organizationId}/messages/${messageId}/raw`, {
    headers: { cookie },
  })
  expect(source.status).toBe(200)
  expect(Buffer.from(await source.arrayBuffer()).toString()).toBe(raw)

  const before = corruptLines().length
  await flipOneBit('attachment_contents', 'content', 'attachment_id', ids[1]!)
  expectError(await asApi(await downloadAttachment(server, ids[1]!, key)), 500, 'internal_error')
  expect(corruptLines().at(-1)).toMatchObject({
    kind: 'attachment',
    id: ids[1],
    size_bytes: files[1]!.length,
    expected_sha256: sha256(files[1]!),
  })
  await flipOneBit('message_sources', 'raw', 'message_id', messageId!)
  expect(
    (await fetch(`${server.url}/console/orgs/${organizationId}/messages/${messageId}/raw`, { headers: { cookie } }))
      .status,
  ).toBe(500)
  expect(corruptLines().length).toBe(before + 2)
})
