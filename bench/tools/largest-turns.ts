/**
 * The event-loop turns of the largest legal message: a test server in this process, the
 * message sent N times over SMTP (64 KiB writes, as a sender's socket takes it), and for
 * each delivery the most main-thread CPU between two ticks of a 1 ms timer and the longest
 * timer lateness. `TRIES` (default 10) deliveries; prints each and the least and median.
 * Run: `bun bench/tools/largest-turns.ts` (add `--cpu-prof` before the path for a profile).
 */
import { watchEventLoop } from '../../test/support/event-loop.ts'
import { largestLegalMessage } from '../../test/support/generated-messages.ts'
import { startTestServer } from '../../test/support/harness.ts'
import { SmtpClient } from '../../test/support/smtp.ts'

const tries = Number(process.env.TRIES ?? 10)
const server = await startTestServer({
  env: {
    LOG_LEVEL: 'silent',
    LIMIT_MONTHLY_EMAILS: '100000',
    LIMIT_ACTIVE_INBOXES: '1000',
    LIMIT_INBOX_BURST: '100000',
    LIMIT_ORG_BURST: '100000',
  },
})
const tenant = await server.tenant()
const client = await SmtpClient.connect(server.app.smtpPort)
await client.command('EHLO turns.test')
const raw = largestLegalMessage()
const wire = Buffer.concat([Buffer.from(raw.toString('latin1').replace(/^\./gm, '..'), 'latin1'), Buffer.from('.\r\n')])
const figures: Array<{ cpuMs: number; delayMs: number }> = []
for (let i = 0; i < tries; i++) {
  const inbox = (await server.post('/v1/inboxes', tenant.key)).body.data
  await client.command('MAIL FROM:<turns@sender.example>')
  await client.command(`RCPT TO:<${inbox.address}>`)
  await client.command('DATA')
  Bun.gc(true)
  const watch = watchEventLoop(1)
  const reply = await client.writePaced(wire)
  const { cpuMs, delayMs } = watch.stop()
  if (reply.code !== 250) throw new Error(`${reply.code} ${reply.text}`)
  figures.push({ cpuMs, delayMs })
  console.log(`delivery ${i + 1}: worst turn ${cpuMs.toFixed(1)} ms CPU, timer late ${delayMs.toFixed(1)} ms`)
  await server.delete(`/v1/inboxes/${inbox.id}`, tenant.key)
}
const sorted = figures.map((f) => f.cpuMs).toSorted((a, b) => a - b)
console.log(
  JSON.stringify({
    least_ms: +sorted[0]!.toFixed(1),
    median_ms: +sorted[Math.floor(sorted.length / 2)]!.toFixed(1),
    worst_ms: +sorted.at(-1)!.toFixed(1),
    load_average_1m: +(await Bun.file('/proc/loadavg').text()).split(' ')[0]!,
  }),
)
await client.quit()
await server.stop()
