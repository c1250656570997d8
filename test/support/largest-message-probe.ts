/**
 * Delivers the largest legal message (test/support/generated-messages.ts) to a server started
 * in this fresh process, the event loop watched while the server handles its DATA and
 * `/health` asked over and over, as test/inbound/largest-message.event-loop.test.ts needs it.
 * A try over the bounds is made again (`measureWithin`). Prints one JSON line with the
 * figures of the try kept, and whether the stored source is the bytes sent.
 * A fresh process for the reason corpus-probe.ts gives: a forced collection in the test
 * runner's process walks every object the earlier test files left alive.
 */
import { createHash } from 'node:crypto'
import {
  LARGEST_MESSAGE_TURN_BOUND_MS,
  measureWithin,
  pollHealth,
  RESPONSIVE_BOUND_MS,
  watchEventLoop,
} from './event-loop.ts'
import { largestLegalMessage } from './generated-messages.ts'
import { startTestServer } from './harness.ts'
import { SmtpClient } from './smtp.ts'

const server = await startTestServer({ env: { LOG_LEVEL: 'silent' } })
const tenant = await server.tenant()
const raw = largestLegalMessage()
// The message ends with CRLF: the final dot follows it.
const wire = Buffer.concat([SmtpClient.dotStuffed(raw), Buffer.from('.\r\n')])

async function deliver() {
  const inbox = (await server.post('/v1/inboxes', tenant.key)).body.data
  const client = await SmtpClient.connect(server.app.smtpPort)
  try {
    for (const line of ['EHLO largest.test', 'MAIL FROM:<big@sender.example>', `RCPT TO:<${inbox.address}>`, 'DATA'])
      await client.command(line)
    Bun.gc(true) // the previous try's garbage is not this one's cost
    const watch = watchEventLoop(1)
    const health = pollHealth(server.url)
    const reply = await client.writePaced(wire)
    const stall = watch.stop()
    const healthMs = await health.stop()
    return { reply: `${reply.code} ${reply.text}`, ...stall, healthMs }
  } finally {
    await client.quit()
  }
}

const { result, tries } = await measureWithin(
  deliver,
  (d) => d.cpuMs <= LARGEST_MESSAGE_TURN_BOUND_MS && d.heldMs < RESPONSIVE_BOUND_MS && d.healthMs < RESPONSIVE_BOUND_MS,
)
const id = /msg_[0-9a-f]{32}/.exec(result.reply)?.[0]
const [source] = id ? await server.query('SELECT raw FROM message_sources WHERE message_id = ?', id) : []
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')
const sourceMatches = source !== undefined && sha256(source.raw) === sha256(raw)
console.log(JSON.stringify({ ...result, tries, sourceMatches }))
await server.stop()
process.exit(0)
