/**
 * A large message's blobs are written on the stager's thread before its transaction
 * (src/storage/sqlite/blob-stager.ts). What that must never leave behind: rows staged for a
 * copy that was not stored (here its inbox was deleted between RCPT TO and the end of DATA)
 * are removed at once, and rows a crash left between staging and commit are removed when the
 * server next starts. Stored copies keep their bytes throughout. That it frees the event
 * loop is proven by test/inbound/largest-message.event-loop.test.ts.
 */
import { Database } from 'bun:sqlite'
import { expect, setDefaultTimeout, test } from 'bun:test'
import { startApp } from '../../src/app.ts'
import { loadConfig } from '../../src/config.ts'
import { createLogger } from '../../src/log.ts'
import { multipartMessage, randomAttachment } from '../support/deploy-mime.ts'
import { describeForBackends, startTestServer } from '../support/harness.ts'
import { countRows, deliver, newInbox } from '../support/messages.ts'
import { SmtpClient } from '../support/smtp.ts'
import { until } from '../support/wait.ts'

setDefaultTimeout(30_000)

const MiB = 1024 * 1024
/** Blob rows no message or attachment owns. */
const UNOWNED =
  'SELECT (SELECT count(*) FROM message_sources WHERE message_id NOT IN (SELECT id FROM messages)) + (SELECT count(*) FROM attachment_contents WHERE attachment_id NOT IN (SELECT id FROM attachments)) AS n'

async function download(url: string, key: string, attachmentId: string): Promise<Buffer> {
  const response = await fetch(`${url}/v1/attachments/${attachmentId}`, { headers: { authorization: `Bearer ${key}` } })
  expect(response.status).toBe(200)
  return Buffer.from(await response.arrayBuffer())
}

describeForBackends(['sqlite'], 'the stager belongs to the SQLite adapter', 'staged blobs', () => {
  test('a copy not stored (its inbox deleted after RCPT TO) leaves no staged row; the stored copy is whole', async () => {
    const server = await startTestServer()
    try {
      const { key } = await server.tenant()
      const [kept, deleted] = [await newInbox(server, key), await newInbox(server, key)]
      const attachment = randomAttachment('big.bin', 2 * MiB)
      const raw = multipartMessage({
        to: kept.address,
        subject: 'two copies',
        text: 'one is kept',
        attachments: [attachment],
      })
      const client = await SmtpClient.connect(server.app.smtpPort)
      for (const line of [
        'EHLO stager.test',
        'MAIL FROM:<big@example.com>',
        `RCPT TO:<${kept.address}>`,
        `RCPT TO:<${deleted.address}>`,
      ])
        expect((await client.command(line)).code).toBe(250)
      expect((await client.command('DATA')).code).toBe(354)
      expect((await server.delete(`/v1/inboxes/${deleted.id}`, key)).status).toBe(204)
      const reply = await client.message(raw)
      await client.quit()
      expect(reply.code).toBe(250)
      const ids = reply.text.match(/msg_[0-9a-f]{32}/g) ?? []
      expect(ids).toHaveLength(1)
      await until(() => countRows(server.databasePath, UNOWNED) === 0, 'the deleted copy’s staged rows removed')
      expect(countRows(server.databasePath, 'SELECT count(*) AS n FROM message_sources')).toBe(1)
      const message = (await server.get(`/v1/messages/${ids[0]}`, key)).body.data
      expect((await download(server.url, key, message.attachments[0].id)).equals(attachment.bytes)).toBe(true)
    } finally {
      await server.stop()
    }
  })

  test('rows a crash left between staging and commit are removed at the next start; stored messages keep theirs', async () => {
    const first = await startTestServer()
    const { key } = await first.tenant()
    const inbox = await newInbox(first, key)
    const attachment = randomAttachment('kept.bin', 1.5 * MiB)
    const [id] = await deliver(
      first,
      inbox.address,
      multipartMessage({ to: inbox.address, subject: 'kept', text: 'kept', attachments: [attachment] }),
    )
    await first.app.stop()
    // What the stager's connection had committed when the process died before the message's
    // transaction: blob rows keyed by ids no message or attachment row has.
    const file = new Database(first.databasePath)
    // As any second connection does: a checkpoint the stopped server's worker was finishing
    // may hold the file a moment longer.
    file.run('PRAGMA busy_timeout = 5000')
    file
      .query('INSERT INTO message_sources (message_id, raw, sha256) VALUES (?, ?, NULL)')
      .run(`msg_${'d'.repeat(32)}`, new Uint8Array(2 * MiB))
    file
      .query('INSERT INTO attachment_contents (attachment_id, content, sha256) VALUES (?, ?, NULL)')
      .run(`att_${'d'.repeat(32)}`, new Uint8Array(MiB))
    file.close()
    expect(countRows(first.databasePath, UNOWNED)).toBe(2)

    const app = await startApp({
      config: loadConfig({
        PORT: '0',
        SMTP_PORT: '0',
        HOST: '127.0.0.1',
        DATABASE_PATH: first.databasePath,
        RECEIVING_DOMAIN: 'inbox.test',
      }),
      logger: createLogger('silent'),
    })
    try {
      await until(() => countRows(first.databasePath, UNOWNED) === 0, 'the crash’s staged rows removed')
      const message = (
        (await (
          await fetch(`${app.httpUrl}/v1/messages/${id}`, { headers: { authorization: `Bearer ${key}` } })
        ).json()) as any
      ).data
      expect((await download(app.httpUrl, key, message.attachments[0].id)).equals(attachment.bytes)).toBe(true)
      expect(countRows(first.databasePath, 'SELECT count(*) AS n FROM message_sources')).toBe(1)
    } finally {
      await app.stop()
      await first.stop()
    }
  })
})
