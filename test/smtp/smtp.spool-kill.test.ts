/**
 * SIGKILL in the middle of a spooled transfer, against the real entry as deployed (a child
 * process with Litestream beside it): a message that got its 250 a moment before is there
 * after the restart, byte for byte; the one still mid-DATA is not, and its spool file,
 * which the kill left on the volume, is removed at start-up.
 */
import { afterAll, expect, test } from 'bun:test'
import { readdirSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { multipartMessage, randomAttachment } from '../support/deploy-mime.ts'
import { allMessages, api, createTenant, getJson, makeDeployment, startEntry } from '../support/entry-process.ts'
import { SmtpClient } from '../support/smtp.ts'
import { until } from '../support/wait.ts'

const MiB = 1024 * 1024
const cleanups: Array<() => void> = []
afterAll(() => {
  for (const cleanup of cleanups) cleanup()
})

test('kill -9 mid spooled transfer: the acknowledged message survives whole, the unfinished one leaves nothing', async () => {
  const deployment = makeDeployment()
  cleanups.push(deployment.cleanup)
  const spoolDir = join(dirname(deployment.databasePath), 'spool')
  const spooled = () => readdirSync(spoolDir).map((name) => statSync(join(spoolDir, name)).size)
  let entry = await startEntry(deployment)
  const key = createTenant(deployment)
  const inbox = ((await (await api(entry.httpUrl, key, 'POST', '/v1/inboxes')).json()) as any).data

  // Mid-transfer: 2 MiB of a 3 MiB message written, so it is in a spool file now.
  const unfinished = await SmtpClient.connect(entry.smtpPort)
  for (const line of ['EHLO crash.test', 'MAIL FROM:<big@example.com>', `RCPT TO:<${inbox.address}>`])
    expect((await unfinished.command(line)).code).toBe(250)
  expect((await unfinished.command('DATA')).code).toBe(354)
  const unfinishedRaw = Buffer.from(
    multipartMessage({
      to: inbox.address,
      subject: 'never finished',
      text: 'cut',
      attachments: [randomAttachment('cut.bin', 2 * MiB)],
    }),
  )
  unfinished.writeBody(unfinishedRaw.subarray(0, 2 * MiB))
  await until(() => spooled().some((size) => size >= 1.5 * MiB), 'the unfinished message in the spool', {
    timeoutMs: 10_000,
  })

  // Spooled too (1.5 MiB), acknowledged; the kill follows its 250 at once.
  const attachment = randomAttachment('kept.bin', 1.5 * MiB)
  const acknowledged = await SmtpClient.connect(entry.smtpPort)
  await acknowledged.command('EHLO crash.test')
  await acknowledged.command('MAIL FROM:<big@example.com>')
  expect((await acknowledged.command(`RCPT TO:<${inbox.address}>`)).code).toBe(250)
  const reply = await acknowledged.data(
    multipartMessage({ to: inbox.address, subject: 'acknowledged', text: 'kept', attachments: [attachment] }),
  )
  expect(reply.code).toBe(250)
  await entry.kill()
  unfinished.destroy()
  acknowledged.destroy()
  expect(spooled().some((size) => size >= 1.5 * MiB)).toBe(true) // the kill left the unfinished transfer on disk

  entry = await startEntry(deployment)
  try {
    expect(readdirSync(spoolDir)).toEqual([])
    const messages = await allMessages(entry.httpUrl, key, inbox.id)
    expect(messages.map((m) => m.subject)).toEqual(['acknowledged'])
    const message = (await getJson(entry.httpUrl, key, `/v1/messages/${messages[0].id}`)).data
    const download = await api(entry.httpUrl, key, 'GET', `/v1/attachments/${message.attachments[0].id}`)
    expect(Buffer.from(await download.arrayBuffer()).equals(attachment.bytes)).toBe(true)
    expect(entry.output()).toContain('spool_cleared')
  } finally {
    await entry.stop()
  }
}, 60_000)
