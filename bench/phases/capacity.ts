/**
 * Capacity on one machine. The database is grown in steps toward a million stored 2 KB
 * messages (direct SQL inserts, spread over 30 days of retention and many inboxes, as a
 * steady state at full retention would be); at each step the server is restarted on it and
 * start-up, settled RSS, 2 KB ingest and wake latency are measured. Also the RSS one idle
 * SMTP session costs. The long-poll cost comes from the memory phase.
 */
import { Database } from 'bun:sqlite'
import { rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { headersFor, type Shape } from '../lib/messages.ts'
import { PigeonholeApi } from '../lib/pigeonhole-api.ts'
import { settledRss, waitQuiet } from '../lib/proc.ts'
import { SmtpClient } from '../lib/smtp-client.ts'
import { median, percentile, sleep } from '../lib/stats.ts'
import { startPigeonhole, tempDir } from '../lib/targets.ts'
import { ingestRound } from './ingest.ts'
import { pigeonholeLatency } from './latency.ts'
import { timeStartup } from './memory.ts'

export interface CapacityStep {
  messages: number
  databaseMiB: number
  fillSeconds: number
  startupMs: number
  idleRssMiB: number
  ingestPerSecond: number
  wakeP50Ms: number
  wakeP99Ms: number
  rssAfterMiB: number
}

export interface CapacityResult {
  steps: CapacityStep[]
  smtpSessions: number
  smtpSessionsAddMiB: number
}

const INBOXES = 1000
const DAY = 86_400_000
const BATCH = 5000

/** Adds rows until the database holds `target` messages; returns the seconds it took. */
function grow(path: string, shape: Shape, from: number, target: number): number {
  const started = performance.now()
  const db = new Database(path)
  db.exec('PRAGMA synchronous = OFF') // a generated fixture, not data anyone acknowledged
  const inboxes = db.query('SELECT id, organization_id AS org, address FROM inboxes').all() as Array<{
    id: string
    org: string
    address: string
  }>
  const message = db.prepare(
    `INSERT INTO messages (id, inbox_id, organization_id, from_name, from_address, to_address, subject, preview, size_bytes, received_at, expires_at,
       search_subject, search_sender, search_sender_domain, internet_message_id) VALUES (?, ?, ?, 'Bench Sender', 'sender@bench.example', ?, ?, ?, ?, ?, ?, ?, 'sender@bench.example', 'bench.example', ?)`,
  )
  const content = db.prepare(
    `INSERT INTO message_contents (message_id, text_body, html_body, headers_json) VALUES (?, ?, NULL, '[]')`,
  )
  const source = db.prepare('INSERT INTO message_sources (message_id, raw) VALUES (?, ?)')
  const now = Date.now()
  for (let n = from; n < target; ) {
    const end = Math.min(target, n + BATCH)
    db.transaction(() => {
      for (; n < end; n++) {
        const inbox = inboxes[n % inboxes.length]!
        const id = `msg_${n.toString(16).padStart(32, '0')}`
        const receivedAt = now - ((n * 7919) % (30 * DAY))
        const subject = `Bench capacity ${n}`
        const raw = Buffer.from(headersFor(shape, inbox.address, n, subject) + shape.body)
        message.run(
          id,
          inbox.id,
          inbox.org,
          inbox.address,
          subject,
          shape.body.slice(0, 200),
          raw.byteLength,
          new Date(receivedAt).toISOString(),
          new Date(receivedAt + 30 * DAY).toISOString(),
          subject.toLowerCase(),
          `<cap-${n}@bench.example>`,
        )
        content.run(id, shape.body)
        source.run(id, raw)
      }
    })()
  }
  db.exec('PRAGMA wal_checkpoint(TRUNCATE)')
  db.close()
  return (performance.now() - started) / 1000
}

const fileMiB = (path: string) => statSync(path).size / 2 ** 20

export async function capacityPhase(
  shape: Shape,
  options: { steps: number[]; ingestMs: number; latencySamples: number; sessions: number; log: (line: string) => void },
): Promise<CapacityResult> {
  const dir = tempDir('capacity')
  const path = join(dir, 'pigeonhole.db')
  const first = await startPigeonhole(path)
  const api = new PigeonholeApi(first.base, first.key)
  for (let i = 0; i < INBOXES; i += 50) await Promise.all(Array.from({ length: 50 }, () => api.createInbox()))

  // One idle SMTP session each: connected, greeted, EHLO answered.
  const before = await settledRss(first.child.pid)
  const sessions = await Promise.all(Array.from({ length: options.sessions }, () => SmtpClient.connect(first.smtpPort)))
  await sleep(500)
  const withSessions = await settledRss(first.child.pid)
  for (const session of sessions) session.close()
  await first.child.stop()

  const steps: CapacityStep[] = []
  let held = 0
  for (const target of options.steps) {
    const fillSeconds = grow(path, shape, held, target)
    held = target
    const startups = [await timeStartup(first.env), await timeStartup(first.env)]
    const server = await startPigeonhole(path)
    try {
      await sleep(500)
      const idle = await settledRss(server.child.pid)
      const serverApi = new PigeonholeApi(server.base, server.key)
      const ingest = await ingestRound(
        {
          name: 'pigeonhole',
          pid: server.child.pid,
          smtpPort: server.smtpPort,
          async prepare() {
            const inbox = await serverApi.createInbox()
            return { to: inbox.address, stored: () => serverApi.countMessages(inbox.id) }
          },
        },
        shape,
        options.ingestMs,
      )
      if (!ingest.verified) throw new Error(`capacity: ${ingest.stored} of ${ingest.accepted} accepted messages stored`)
      const wake = await pigeonholeLatency(serverApi, server.smtpPort, shape, options.latencySamples)
      await waitQuiet(server.child.pid)
      const after = await settledRss(server.child.pid)
      steps.push({
        messages: target,
        databaseMiB: fileMiB(path),
        fillSeconds,
        startupMs: median(startups),
        idleRssMiB: idle.rssMiB,
        ingestPerSecond: ingest.perSecond,
        wakeP50Ms: percentile(wake, 50),
        wakeP99Ms: percentile(wake, 99),
        rssAfterMiB: after.rssMiB,
      })
      options.log(`capacity ${target.toLocaleString('en-US')} messages: ${JSON.stringify(steps.at(-1))}`)
    } finally {
      await server.child.stop()
    }
  }
  await first.stop()
  rmSync(dir, { recursive: true, force: true })
  return { steps, smtpSessions: sessions.length, smtpSessionsAddMiB: withSessions.rssMiB - before.rssMiB }
}
