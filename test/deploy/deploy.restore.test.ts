/**
 * A stopped server's database, deleted, comes back from the litestream replica
 * on the next start through the entry, with every acknowledged inbox and message, bytes
 * identical. Real entry, real litestream binary, real HTTP and SMTP over TCP.
 */
import { afterAll, expect, test } from 'bun:test'
import { existsSync, readdirSync, rmSync } from 'node:fs'
import { sendMail, simpleMessage } from '../support/smtp.ts'
import { allMessages, api, createTenant, getJson, makeDeployment, startEntry } from '../support/entry-process.ts'
import { multipartMessage, randomAttachment } from '../support/deploy-mime.ts'

const deployment = makeDeployment()
afterAll(() => deployment.cleanup())

/** Everything a client can read back: inboxes, full messages, attachment bytes, usage. */
async function snapshot(httpUrl: string, key: string) {
  const inboxes = (await getJson(httpUrl, key, '/v1/inboxes')).data as any[]
  const messages: Record<string, any> = {}
  const downloads: Record<string, Buffer> = {}
  for (const inbox of inboxes) {
    for (const summary of await allMessages(httpUrl, key, inbox.id)) {
      const message = (await getJson(httpUrl, key, `/v1/messages/${summary.id}`)).data
      messages[message.id] = message
      for (const attachment of message.attachments) {
        const response = await api(httpUrl, key, 'GET', `/v1/attachments/${attachment.id}`)
        expect(response.status).toBe(200)
        downloads[attachment.id] = Buffer.from(await response.arrayBuffer())
      }
    }
  }
  const usage = await getJson(httpUrl, key, '/v1/usage')
  return { inboxes, messages, downloads, usage }
}

test('a deleted database is restored from the replica with every acknowledged write', async () => {
  let entry = await startEntry(deployment)
  const key = createTenant(deployment)

  const named = await api(entry.httpUrl, key, 'POST', '/v1/inboxes', { prefix: 'restore-me' })
  expect(named.status).toBe(201)
  const generated = await api(entry.httpUrl, key, 'POST', '/v1/inboxes')
  expect(generated.status).toBe(201)
  const [a, b] = [((await named.json()) as any).data, ((await generated.json()) as any).data]

  const attachments = [randomAttachment('blob.bin', 200_000), randomAttachment('small.bin', 3_000)]
  const sent = [
    sendMail(entry.smtpPort, { to: [a.address] }, multipartMessage({ to: a.address, subject: 'with attachments', text: 'see attached', attachments })),
    sendMail(entry.smtpPort, { to: [b.address] }, simpleMessage({ to: b.address, subject: 'plain', text: 'héllo wörld' })),
    sendMail(entry.smtpPort, { to: [a.address, b.address] }, simpleMessage({ to: a.address, subject: 'to both' })),
  ]
  for (const result of await Promise.all(sent)) expect(result.data?.code).toBe(250)

  const before = await snapshot(entry.httpUrl, key)
  expect(Object.keys(before.messages)).toHaveLength(4) // the last one went to two inboxes
  const withFiles = Object.values(before.messages).find((m: any) => m.subject === 'with attachments')
  expect(withFiles.attachments.map((x: any) => before.downloads[x.id])).toEqual(attachments.map((x) => x.bytes))

  expect(await entry.stop()).toBe(0)
  expect(readdirSync(deployment.replicaPath)).toContain('generations')
  for (const suffix of ['', '-wal', '-shm']) rmSync(deployment.databasePath + suffix, { force: true })
  expect(existsSync(deployment.databasePath)).toBe(false)

  entry = await startEntry(deployment)
  try {
    expect(entry.output()).toContain('restoring snapshot')
    const after = await snapshot(entry.httpUrl, key)
    expect(after.inboxes).toEqual(before.inboxes)
    expect(after.messages).toEqual(before.messages)
    expect(after.downloads).toEqual(before.downloads)
    expect(after.usage).toEqual(before.usage)
    // The restored file is a working database that keeps replicating.
    expect((await api(entry.httpUrl, key, 'POST', '/v1/inboxes', { prefix: 'after-restore' })).status).toBe(201)
  } finally {
    expect(await entry.stop()).toBe(0)
  }
}, 60_000)
