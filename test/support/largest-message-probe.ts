/**
 * Sends the largest legal message to a server started in this fresh process and prints,
 * as one JSON line, the SMTP reply and how long the event loop was held (see
 * test/mime/mime.largest.event-loop.test.ts, which runs this script). A fresh process is
 * what a deployed server is: in the test runner's own process, the forced collections
 * around a large message also walk every object the earlier test files left alive.
 */
import { watchEventLoop } from './event-loop.ts'
import { largestLegalMessage } from './generated-messages.ts'
import { startTestServer } from './harness.ts'
import { SmtpClient } from './smtp.ts'

const server = await startTestServer()
try {
  const tenant = server.tenant()
  const inbox = (await server.post('/v1/inboxes', tenant.key)).body.data
  const raw = largestLegalMessage()
  const wire = Buffer.concat([Buffer.from(raw.toString('latin1').replace(/^\./gm, '..'), 'latin1'), Buffer.from('.\r\n')])
  const client = await SmtpClient.connect(server.app.smtpPort)
  await client.command('EHLO probe.test')
  await client.command('MAIL FROM:<probe@sender.test>')
  await client.command(`RCPT TO:<${inbox.address}>`)
  await client.command('DATA')
  const watch = watchEventLoop(1)
  client.socket.write(wire)
  const reply = await client.next()
  const { cpuMs, delayMs } = watch.stop()
  console.log(JSON.stringify({ reply: `${reply.code} ${reply.text}`, bytes: raw.byteLength, cpuMs, delayMs }))
  client.socket.end()
} finally {
  await server.stop()
}
