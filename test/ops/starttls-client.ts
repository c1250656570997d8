/**
 * STARTTLS by hand for tests: plain SMTP up to `220 Ready to start TLS`, then a TLS client on
 * the same socket, then the small SmtpClient-style exchange over TLS. The server's
 * certificate and the negotiated protocol stay visible to the test.
 */
import { connect as connectTcp, type Socket } from 'node:net'
import { connect as connectTls, type TLSSocket, type ConnectionOptions } from 'node:tls'

export interface Reply {
  code: number
  text: string
}

/** Reads CRLF-terminated SMTP replies (multi-line ones joined) from a socket. */
export class ReplyReader {
  private buffer = ''
  private lines: string[] = []
  private replies: Reply[] = []
  private waiters: Array<(reply: Reply) => void> = []
  constructor(readonly socket: Socket | TLSSocket) {
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => {
      this.buffer += chunk
      for (let index = this.buffer.indexOf('\r\n'); index >= 0; index = this.buffer.indexOf('\r\n')) {
        const line = this.buffer.slice(0, index)
        this.buffer = this.buffer.slice(index + 2)
        this.lines.push(line.slice(4))
        if (line[3] === '-') continue
        const reply = { code: Number(line.slice(0, 3)), text: this.lines.join('\n') }
        this.lines = []
        const waiter = this.waiters.shift()
        if (waiter) waiter(reply)
        else this.replies.push(reply)
      }
    })
    socket.on('error', () => {})
  }
  next(): Promise<Reply> {
    const ready = this.replies.shift()
    if (ready) return Promise.resolve(ready)
    return new Promise((resolve) => this.waiters.push(resolve))
  }
  command(line: string): Promise<Reply> {
    this.socket.write(`${line}\r\n`)
    return this.next()
  }
  /** Stops reading, so the raw socket can be handed to a TLS client. */
  detach(): void {
    this.socket.removeAllListeners('data')
    this.socket.on('error', () => {})
  }
}

/** A plain connection that has seen the greeting and said EHLO; returns the EHLO reply too. */
export async function plainSession(port: number): Promise<{ reader: ReplyReader; socket: Socket; ehlo: Reply }> {
  const socket = connectTcp(port, '127.0.0.1')
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject))
  const reader = new ReplyReader(socket)
  const greeting = await reader.next()
  if (greeting.code !== 220) throw new Error(`greeting ${greeting.code}`)
  const ehlo = await reader.command('EHLO client.test')
  return { reader, socket, ehlo }
}

/** STARTTLS and a completed handshake; the returned reader speaks SMTP over TLS. */
export async function startTls(port: number, options: ConnectionOptions = {}): Promise<{ reader: ReplyReader; tls: TLSSocket }> {
  const { reader, socket } = await plainSession(port)
  const go = await reader.command('STARTTLS')
  if (go.code !== 220) throw new Error(`STARTTLS answered ${go.code} ${go.text}`)
  reader.detach()
  const tls = connectTls({ socket, rejectUnauthorized: false, servername: 'inbox.test', ...options })
  await new Promise<void>((resolve, reject) => tls.once('secureConnect', resolve).once('error', reject))
  return { reader: new ReplyReader(tls), tls }
}
