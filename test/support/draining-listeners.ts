/**
 * A child process with the server's two listeners (Bun.serve and smtp-server, both on port 0)
 * that stops them with the server's own drain on SIGTERM, then exits: a stop a test can race
 * connections against from another process (in one process, a client's connect cannot land
 * between the drain's last accept and its close). Prints `{"http":…,"smtp":…}` once listening.
 * Argument: `drain` (SQLite mode's stop) or `patient` (PostgreSQL mode's drainPatiently).
 */
import type { AddressInfo } from 'node:net'
import { SMTPServer } from 'smtp-server'
import { drain, drainPatiently } from '../../src/app/listeners.ts'

const mode = process.argv[2]
if (mode !== 'drain' && mode !== 'patient') throw new Error(`usage: draining-listeners.ts drain|patient (got ${mode})`)

const http = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('served') })
// Greets at once (no early-talker delay), so a client opens connection after connection quickly;
// after the stop began, a command gets smtp-server's own 421.
const smtp = new SMTPServer({
  authOptional: true,
  logger: false,
  disableReverseLookup: true,
  greetingDelay: 0,
  closeTimeout: 1_000,
})
smtp.listen(0, '127.0.0.1', () => {
  const smtpPort = (smtp.server.address() as AddressInfo).port
  process.stdout.write(`${JSON.stringify({ http: http.port, smtp: smtpPort })}\n`)
})

// A loaded server's event loop: 5 ms of work every 10 ms, so a stop's turns (and the gap between
// its last accept and its close) take as long as they do on a machine that is busy.
setInterval(() => {
  const until = performance.now() + 5
  while (performance.now() < until) {}
}, 10)

process.once('SIGTERM', async () => {
  const none = () => 0
  if (mode === 'drain') await drain(http, smtp, none)
  else await drainPatiently(http, smtp, none, () => {}, 0)
  await http.stop(true)
  process.exit(0)
})
