/**
 * The ingest ceiling: smtp-server on Bun that reads every message to the end and throws
 * it away. Same library and runtime as Pigeonhole, none of the parsing or storage.
 * GET /count on COUNT_PORT tells the bench how many messages it accepted.
 */
import { SMTPServer } from 'smtp-server'

let accepted = 0
const server = new SMTPServer({
  authOptional: true,
  disabledCommands: ['AUTH', 'STARTTLS'],
  logger: false,
  maxClients: 10_000,
  onData(stream, _session, callback) {
    stream.on('end', () => {
      accepted++
      callback()
    })
    stream.resume()
  },
})
server.listen(Number(process.env.SMTP_PORT), '127.0.0.1')
Bun.serve({ port: Number(process.env.COUNT_PORT), hostname: '127.0.0.1', fetch: () => Response.json({ accepted }) })
process.on('SIGTERM', () => server.close(() => process.exit(0)))
