/**
 * Golden tests: each .eml in test/fixtures is sent byte for byte over SMTP and the stored
 * message (include=content) must equal the .json beside it, after replacing the values
 * that differ per run (ids, timestamps) with placeholders. Attachment bytes are compared
 * by SHA-256 of what the download route serves.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { startTestServer, type TestServer, type Tenant } from '../support/harness.ts'
import { sendMail } from '../support/smtp.ts'

const FIXTURES = join(import.meta.dir, '..', 'fixtures')
const emls = readdirSync(FIXTURES)
  .filter((name) => name.endsWith('.eml'))
  .sort()

let server: TestServer
let tenant: Tenant

beforeAll(async () => {
  server = await startTestServer({ env: { LIMIT_INBOX_BURST: '1000', LIMIT_ORG_BURST: '1000' } })
  tenant = await server.tenant()
})
afterAll(() => server.stop())

async function normalize(message: any, inboxId: string): Promise<any> {
  expect(message.id).toMatch(/^msg_[0-9a-f]{32}$/)
  expect(message.inbox_id).toBe(inboxId)
  expect(Date.parse(message.expires_at) - Date.parse(message.received_at)).toBe(30 * 86_400_000)
  const attachments = []
  for (const attachment of message.attachments) {
    expect(attachment.id).toMatch(/^att_[0-9a-f]{32}$/)
    expect(attachment.download_url).toBe(`${server.app.publicUrls.filesUrl}/v1/attachments/${attachment.id}`)
    const download = await fetch(`${server.url}/v1/attachments/${attachment.id}`, {
      headers: { authorization: `Bearer ${tenant.key}` },
    })
    expect(download.status).toBe(200)
    const bytes = Buffer.from(await download.arrayBuffer())
    expect(bytes.byteLength).toBe(attachment.size_bytes)
    attachments.push({
      ...attachment,
      id: '<att>',
      download_url: '<url>',
      sha256: createHash('sha256').update(bytes).digest('hex'),
    })
  }
  return { ...message, id: '<msg>', inbox_id: '<inbox>', received_at: '<time>', expires_at: '<time>', attachments }
}

describe('stored message equals the expected JSON', () => {
  for (const eml of emls) {
    test(eml, async () => {
      const raw = readFileSync(join(FIXTURES, eml))
      const inbox = (await server.post('/v1/inboxes', tenant.key)).body.data
      const sent = await sendMail(
        server.app.smtpPort,
        { from: 'envelope-sender@bounce.example.net', to: [inbox.address] },
        raw,
      )
      expect(sent.data?.code).toBe(250)
      const listed = await server.get(`/v1/inboxes/${inbox.id}/messages?limit=1&include=content`, tenant.key)
      expect(listed.status).toBe(200)
      const [message] = listed.body.data
      expect(message.to).toBe(inbox.address)
      expect(message.size_bytes).toBe(raw.byteLength)
      const actual = await normalize({ ...message, to: '<inbox address>' }, inbox.id)
      const expected = JSON.parse(readFileSync(join(FIXTURES, eml.replace(/\.eml$/, '.json')), 'utf8'))
      expect(actual).toEqual(expected)
      await server.delete(`/v1/inboxes/${inbox.id}`, tenant.key)
    })
  }
})
