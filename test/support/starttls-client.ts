/** STARTTLS sessions for the operations tests, on the shared raw SMTP client. */
import type { ConnectionOptions } from 'node:tls'
import { SmtpClient } from './smtp.ts'

/** A plain connection that has seen the greeting and said EHLO; returns the EHLO reply too. */
export async function plainSession(port: number) {
  const reader = await SmtpClient.connect(port)
  const ehlo = await reader.command('EHLO client.test')
  return { reader, socket: reader.socket, ehlo }
}

/** STARTTLS and a completed handshake; the returned reader speaks SMTP over TLS. */
export async function startTls(port: number, options: ConnectionOptions = {}) {
  const { reader } = await plainSession(port)
  const secure = await reader.startTls({ servername: 'inbox.test', ...options })
  return { reader: secure, tls: secure.socket }
}
