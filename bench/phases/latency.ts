/**
 * Wake latency: the waiter is already waiting (a Pigeonhole long poll, maildev's event
 * feed) before the mail is sent; a sample is the time from the SMTP 250 after DATA to the
 * moment the waiter has its answer (the long-poll response body read, the feed event).
 */
import { MaildevFeed } from '../lib/maildev-feed.ts'
import { headersFor, type Shape } from '../lib/messages.ts'
import type { PigeonholeApi } from '../lib/pigeonhole-api.ts'
import { SmtpClient } from '../lib/smtp-client.ts'
import { percentile, sleep } from '../lib/stats.ts'

export interface LatencyResult {
  target: string
  samples: number
  p50Ms: number
  p90Ms: number
  p99Ms: number
  maxMs: number
}

const WARM_UP = 10
/** Time given to the waiter to be parked before the mail is sent. */
const SETTLE_MS = 10

/** Percentiles over all samples of a target, pooled across rounds. */
export function summarize(target: string, samples: number[]): LatencyResult {
  return {
    target,
    samples: samples.length,
    p50Ms: percentile(samples, 50),
    p90Ms: percentile(samples, 90),
    p99Ms: percentile(samples, 99),
    maxMs: Math.max(...samples),
  }
}

/** `waiter` (by default `api`, the same server) holds the long poll: another machine for the wake-up across machines. */
export async function pigeonholeLatency(
  api: PigeonholeApi,
  smtpPort: number,
  shape: Shape,
  count: number,
  waiter: PigeonholeApi = api,
): Promise<number[]> {
  const client = await SmtpClient.connect(smtpPort)
  const samples: number[] = []
  for (let i = 0; i < count + WARM_UP; i++) {
    // A fresh inbox per sample, as in the recommended test flow; nothing matches until the mail lands.
    const inbox = await api.createInbox()
    const url = `${waiter.base}/v1/inboxes/${inbox.id}/messages?wait_seconds=30&limit=1&include=content`
    const answered = fetch(url, { headers: waiter.headers }).then(async (response) => {
      const body = await response.text()
      return { at: performance.now(), status: response.status, body }
    })
    await sleep(SETTLE_MS)
    const reply = await client.send('sender@bench.example', inbox.address, headersFor(shape, inbox.address), shape.body)
    if (reply.code !== 250) throw new Error(`latency: SMTP ${reply.code} ${reply.text}`)
    const poll = await answered
    if (poll.status !== 200 || !poll.body.includes(inbox.id))
      throw new Error(`latency: long poll answered ${poll.status} ${poll.body.slice(0, 200)}`)
    if (i >= WARM_UP) samples.push(poll.at - reply.at)
  }
  client.close()
  return samples
}

export async function maildevLatency(base: string, smtpPort: number, shape: Shape, count: number): Promise<number[]> {
  const feed = await MaildevFeed.connect(base)
  const client = await SmtpClient.connect(smtpPort)
  const samples: number[] = []
  for (let i = 0; i < count + WARM_UP; i++) {
    const to = `wake${i}@bench.test`
    await sleep(SETTLE_MS)
    const event = feed.nextMail()
    const reply = await client.send('sender@bench.example', to, headersFor(shape, to), shape.body)
    if (reply.code !== 250) throw new Error(`latency: maildev SMTP ${reply.code} ${reply.text}`)
    const at = await event
    if (i >= WARM_UP) samples.push(at - reply.at)
  }
  client.close()
  feed.close()
  return samples
}
