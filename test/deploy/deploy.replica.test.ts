/**
 * The entry with real Litestream, real HTTP and SMTP over TCP, each test on a deployment of
 * its own (database folder and file replica):
 * - SIGKILL of entry, litestream and server together while several SMTP connections
 *   deliver messages. After a restart every message that got a 250 is there, and no
 *   visible message lacks an attachment. Then the same after a restore from the replica,
 *   which shows that commits made just before the crash reach the replica too.
 * - A stopped server's database, deleted, comes back from the replica on the next start
 *   through the entry, with every acknowledged inbox and message, bytes identical.
 * Each waits on the entry's stop, which holds a SIGTERM until litestream has had time to
 * open the database (src/entry.ts), so the two run at the same time.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, readdirSync, rmSync } from 'node:fs'
import { SmtpClient, sendMail, simpleMessage, type Reply } from '../support/smtp.ts'
import {
  allMessages,
  api,
  createTenant,
  getJson,
  makeDeployment,
  startEntry,
  stopped,
  type RunningEntry,
} from '../support/entry-process.ts'
import { multipartMessage, randomAttachment, type Attachment } from '../support/deploy-mime.ts'

const cleanups: Array<() => void> = []
afterAll(() => {
  for (const cleanup of cleanups) cleanup()
})

const CONNECTIONS = 4
const KILL_AFTER_ACKS = 30

/** Subjects of the visible messages; fails on any message that is not whole. */
async function visibleMessages(
  entry: RunningEntry,
  key: string,
  inboxIds: string[],
  sent: Map<string, Attachment[]>,
): Promise<Set<string>> {
  const seen = new Set<string>()
  for (const inboxId of inboxIds) {
    for (const summary of await allMessages(entry.httpUrl, key, inboxId)) {
      const message = (await getJson(entry.httpUrl, key, `/v1/messages/${summary.id}`)).data
      const expected = sent.get(message.subject)
      expect(expected).toBeDefined()
      expect(message.attachments.map((a: any) => a.filename)).toEqual(expected!.map((a) => a.filename))
      for (const [index, attachment] of (message.attachments as any[]).entries()) {
        const response = await api(entry.httpUrl, key, 'GET', `/v1/attachments/${attachment.id}`)
        expect(response.status).toBe(200)
        expect(Buffer.from(await response.arrayBuffer()).equals(expected![index]!.bytes)).toBe(true)
      }
      seen.add(message.subject)
    }
  }
  return seen
}

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

describe.concurrent('replication', () => {
  test('SIGKILL during ingest loses no acknowledged message and leaves none half-written', async () => {
    const deployment = makeDeployment()
    cleanups.push(deployment.cleanup)
    let entry = await startEntry(deployment)
    const key = createTenant(deployment)
    const inboxes: { id: string; address: string }[] = []
    for (let i = 0; i < 3; i++) {
      const response = await api(entry.httpUrl, key, 'POST', '/v1/inboxes')
      expect(response.status).toBe(201)
      inboxes.push(((await response.json()) as any).data)
    }

    const sent = new Map<string, Attachment[]>() // every message whose DATA was started
    const acknowledged = new Set<string>()
    let killed: Promise<void> | undefined
    let inFlight = 0 // DATA started, reply not yet seen
    const smtpPort = entry.smtpPort
    const crashed = entry
    // Past the threshold, the kill comes while some connection has DATA in flight.
    const maybeKill = () => {
      if (acknowledged.size >= KILL_AFTER_ACKS && inFlight > 0) killed ??= crashed.kill()
    }

    async function sender(connection: number): Promise<void> {
      const client = await SmtpClient.connect(smtpPort)
      // A reply never comes once the server is gone; the closed socket ends the wait.
      const closed = new Promise<never>((_, reject) =>
        client.socket.once('close', () => reject(new Error('connection closed'))),
      )
      closed.catch(() => {})
      const step = (reply: Promise<Reply>) => Promise.race([reply, closed])
      try {
        await step(client.command('EHLO crash.test'))
        for (let n = 0; ; n++) {
          const inbox = inboxes[(connection + n) % inboxes.length]!
          const subject = `crash ${connection}-${n}`
          const attachments = [randomAttachment('first.bin', 40_000), randomAttachment('second.bin', 15_000)]
          expect((await step(client.command('MAIL FROM:<load@example.com>'))).code).toBe(250)
          expect((await step(client.command(`RCPT TO:<${inbox.address}>`))).code).toBe(250)
          sent.set(subject, attachments)
          inFlight++
          maybeKill()
          const reply = await step(
            client.data(multipartMessage({ to: inbox.address, subject, text: subject, attachments })),
          )
          inFlight--
          expect(reply.code).toBe(250)
          acknowledged.add(subject)
          maybeKill()
        }
      } catch (error) {
        if (!killed) throw error // before the kill, every step must succeed
      } finally {
        client.destroy()
      }
    }
    await Promise.all(Array.from({ length: CONNECTIONS }, (_, i) => sender(i)))
    await killed
    expect(acknowledged.size).toBeGreaterThanOrEqual(KILL_AFTER_ACKS)

    /** Every acknowledged subject the running entry's API does not list. */
    const missingFromEntry = async () => {
      const seen = await visibleMessages(
        entry,
        key,
        inboxes.map((i) => i.id),
        sent,
      )
      return [...acknowledged].filter((subject) => !seen.has(subject))
    }

    // Restart on the same file (the volume survived the crash).
    entry = await startEntry(deployment)
    try {
      expect(await missingFromEntry()).toEqual([])
    } finally {
      expect(await stopped(entry)).toBe(0)
    }

    // Now the volume is lost too: everything must come back from the replica.
    for (const suffix of ['', '-wal', '-shm']) rmSync(deployment.databasePath + suffix, { force: true })
    entry = await startEntry(deployment)
    try {
      expect(entry.output()).toContain('restoring snapshot')
      expect(await missingFromEntry()).toEqual([])
    } finally {
      expect(await stopped(entry)).toBe(0)
    }
  }, 60_000)

  test('a deleted database is restored from the replica with every acknowledged write', async () => {
    const deployment = makeDeployment()
    cleanups.push(deployment.cleanup)
    let entry = await startEntry(deployment)
    const key = createTenant(deployment)

    const named = await api(entry.httpUrl, key, 'POST', '/v1/inboxes', { prefix: 'restore-me' })
    expect(named.status).toBe(201)
    const generated = await api(entry.httpUrl, key, 'POST', '/v1/inboxes')
    expect(generated.status).toBe(201)
    const [a, b] = [((await named.json()) as any).data, ((await generated.json()) as any).data]

    const attachments = [randomAttachment('blob.bin', 200_000), randomAttachment('small.bin', 3_000)]
    const sent = [
      sendMail(
        entry.smtpPort,
        { to: [a.address] },
        multipartMessage({ to: a.address, subject: 'with attachments', text: 'see attached', attachments }),
      ),
      sendMail(
        entry.smtpPort,
        { to: [b.address] },
        simpleMessage({ to: b.address, subject: 'plain', text: 'héllo wörld' }),
      ),
      sendMail(entry.smtpPort, { to: [a.address, b.address] }, simpleMessage({ to: a.address, subject: 'to both' })),
    ]
    for (const result of await Promise.all(sent)) expect(result.data?.code).toBe(250)

    const before = await snapshot(entry.httpUrl, key)
    expect(Object.keys(before.messages)).toHaveLength(4) // the last one went to two inboxes
    const withFiles = Object.values(before.messages).find((m: any) => m.subject === 'with attachments')
    expect(withFiles.attachments.map((x: any) => before.downloads[x.id])).toEqual(attachments.map((x) => x.bytes))

    expect(await stopped(entry)).toBe(0)
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
      expect(await stopped(entry)).toBe(0)
    }
  }, 60_000)
})
