/**
 * Large messages are stored one at a time (the SMTP guards' store gate, LIMIT_MESSAGE_BYTES
 * at once), but a message leaves that gate once its transaction commits, not once the WAL
 * sync its 250 waits for returns: the next large message then writes its blobs and commits
 * while the disk syncs the one before (the sync took 19 ms at the median, up to 176 ms, per
 * 9 MiB message of the big-mail flood, and nothing else of the store ran meanwhile). The
 * 250s still wait for their syncs. The WAL sync is held by wrapping node:fs's fsync (not one
 * of our modules), as test/storage/storage.wal-sync.test.ts does.
 */
import { afterEach, expect, setDefaultTimeout, test } from 'bun:test'
import fs from 'node:fs'
import { multipartMessage, randomAttachment } from '../support/deploy-mime.ts'
import { describeForBackends, startTestServer, type TestServer } from '../support/harness.ts'
import { countRows, newInbox } from '../support/messages.ts'
import { sendMail } from '../support/smtp.ts'
import { until } from '../support/wait.ts'

setDefaultTimeout(30_000)

const MiB = 1024 * 1024
const realFsync = fs.fsync
let server: TestServer | undefined

afterEach(async () => {
  fs.fsync = realFsync
  await server?.stop()
  server = undefined
})

describeForBackends(['sqlite'], 'the WAL sync after the commit is the SQLite adapter’s', 'the store gate', () => {
  test('the next large message commits while the one before waits for its WAL sync; each 250 waits for its own', async () => {
    // Each message is over half the limit, so the store gate holds one at a time.
    server = await startTestServer({ env: { LIMIT_MESSAGE_BYTES: String(3 * MiB) } })
    const { key } = await server.tenant()
    const inbox = await newInbox(server, key)
    const held: Array<() => void> = []
    fs.fsync = ((fd: number, callback: (error: Error | null) => void) => {
      if (fs.readlinkSync(`/proc/self/fd/${fd}`).endsWith('-wal')) held.push(() => realFsync(fd, callback))
      else realFsync(fd, callback)
    }) as typeof fs.fsync
    const message = (subject: string) =>
      multipartMessage({
        to: inbox.address,
        subject,
        text: 'a large one',
        attachments: [randomAttachment('big.bin', 1.7 * MiB)],
      })
    const replies: number[] = []
    const sent = ['first', 'second'].map((subject, i) =>
      sendMail(
        server!.app.smtpPort,
        { from: 'big@example.com', to: [inbox.address] },
        message(subject),
        `127.0.0.${i + 2}`,
      )
        .then((result) => result.data?.code ?? 0)
        .then((code) => replies.push(code)),
    )
    const stored = () => countRows(server!.databasePath, 'SELECT count(*) AS n FROM messages')
    await until(() => held.length > 0, 'the first WAL sync to be asked for')
    // Both committed while the first sync is still held; neither is acknowledged yet.
    await until(() => stored() === 2, 'the second message committed during the first one’s sync')
    expect(held).toHaveLength(1)
    expect(replies).toEqual([])
    while (replies.length < 2) {
      held.shift()?.()
      await Bun.sleep(5) // lets the next sync be asked for
    }
    await Promise.all(sent)
    expect(replies).toEqual([250, 250])
  })
})
