/**
 * End-to-end latency as a test sees it: the waiter is parked first (a Pigeonhole long poll
 * with include=content, maildev's event feed, which carries the parsed mail), then the
 * sender opens a new connection per message, as nodemailer without `pool` and most
 * framework mailers do: connect, greeting, EHLO, MAIL, RCPT, DATA, 250, QUIT. Each sample
 * gives three spans, all ending when the waiter has the message: from the TCP connect,
 * from MAIL FROM, and from the 250.
 */
import { MaildevFeed } from '../lib/maildev-feed.ts'
import { headersFor, type Shape } from '../lib/messages.ts'
import type { PigeonholeApi } from '../lib/pigeonhole-api.ts'
import { SmtpClient } from '../lib/smtp-client.ts'
import { sleep } from '../lib/stats.ts'

export interface EndToEndSamples {
  connect: number[]
  mail: number[]
  reply: number[]
}

const WARM_UP = 5
/** Time given to the waiter to be parked before the sender connects. */
const SETTLE_MS = 10

export const emptySamples = (): EndToEndSamples => ({ connect: [], mail: [], reply: [] })

/**
 * One message on a fresh connection; `answered` resolves with performance.now() when the
 * waiter has it. Returns the three spans.
 */
async function sendOnNewConnection(smtpPort: number, to: string, shape: Shape, answered: Promise<number>) {
  const connectAt = performance.now()
  const client = await SmtpClient.connect(smtpPort)
  const reply = await client.send('sender@bench.example', to, headersFor(shape, to), shape.body)
  if (reply.code !== 250) throw new Error(`end-to-end: SMTP ${reply.code} ${reply.text}`)
  client.close()
  const at = await answered
  return { connect: at - connectAt, mail: at - client.mailAt, reply: at - reply.at }
}

function keep(samples: EndToEndSamples, i: number, spans: { connect: number; mail: number; reply: number }) {
  if (i < WARM_UP) return
  samples.connect.push(spans.connect)
  samples.mail.push(spans.mail)
  samples.reply.push(spans.reply)
}

export async function pigeonholeEndToEnd(
  api: PigeonholeApi,
  smtpPort: number,
  shape: Shape,
  count: number,
  samples: EndToEndSamples,
): Promise<void> {
  for (let i = 0; i < count + WARM_UP; i++) {
    // A fresh inbox per sample, as in the recommended test flow; nothing matches until the mail lands.
    const inbox = await api.createInbox()
    const url = `${api.base}/v1/inboxes/${inbox.id}/messages?wait_seconds=30&limit=1&include=content`
    let body = ''
    const answered = fetch(url, { headers: api.headers }).then(async (response) => {
      body = await response.text()
      if (response.status !== 200)
        throw new Error(`end-to-end: long poll answered ${response.status} ${body.slice(0, 200)}`)
      return performance.now()
    })
    await sleep(SETTLE_MS)
    const spans = await sendOnNewConnection(smtpPort, inbox.address, shape, answered)
    if (!body.includes(inbox.id) || !body.includes('"text"'))
      throw new Error(`end-to-end: long poll answer without the message: ${body.slice(0, 200)}`)
    keep(samples, i, spans)
  }
}

export async function maildevEndToEnd(
  base: string,
  smtpPort: number,
  shape: Shape,
  count: number,
  samples: EndToEndSamples,
): Promise<void> {
  const feed = await MaildevFeed.connect(base)
  try {
    for (let i = 0; i < count + WARM_UP; i++) {
      const to = `e2e${i}@bench.test`
      await sleep(SETTLE_MS)
      keep(samples, i, await sendOnNewConnection(smtpPort, to, shape, feed.nextMail()))
    }
  } finally {
    feed.close()
  }
}
