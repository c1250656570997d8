/**
 * A small raw SMTP client over TCP for tests: every reply code and text is visible, and
 * a test can stop at any step (RSET, QUIT, drop the connection mid-DATA).
 */
import { connect, type Socket } from 'node:net'
import { type ConnectionOptions, connect as connectTls, type TLSSocket } from 'node:tls'

export interface Reply {
  code: number
  text: string
}

export class SmtpClient {
  private buffer = ''
  private waiters: Array<(reply: Reply) => void> = []
  private replies: Reply[] = []
  private lines: string[] = []

  private constructor(readonly socket: Socket) {
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => this.onData(chunk))
    socket.on('error', () => {})
  }

  static async connect(port: number, host = '127.0.0.1', localAddress?: string): Promise<SmtpClient> {
    const { client, greeting } = await SmtpClient.open(port, localAddress, host)
    if (greeting.code !== 220) throw new Error(`unexpected greeting ${greeting.code} ${greeting.text}`)
    return client
  }

  /**
   * Connects (from `localAddress`, any 127.x.y.z on Linux) and returns the first reply, whatever
   * it is. `preamble` is written first, as a proxy writes its PROXY line.
   */
  static async open(port: number, localAddress?: string, host = '127.0.0.1', preamble?: string): Promise<{ client: SmtpClient; greeting: Reply }> {
    const socket = connect({ port, host, localAddress })
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve)
      socket.once('error', reject)
    })
    const client = new SmtpClient(socket)
    if (preamble) socket.write(preamble)
    return { client, greeting: await client.next() }
  }

  /** Resolves when the server has closed the connection. */
  closed(): Promise<void> {
    if (this.socket.readyState === 'closed' || this.socket.destroyed) return Promise.resolve()
    return new Promise((resolve) => this.socket.once('close', () => resolve()))
  }

  /** STARTTLS and a finished handshake; the client returned speaks SMTP over TLS on this connection. */
  async startTls(options: ConnectionOptions = {}): Promise<SmtpClient & { socket: TLSSocket }> {
    const go = await this.command('STARTTLS')
    if (go.code !== 220) throw new Error(`STARTTLS answered ${go.code} ${go.text}`)
    this.socket.removeAllListeners('data')
    const secure = connectTls({ socket: this.socket, rejectUnauthorized: false, ...options })
    await new Promise<void>((resolve, reject) => secure.once('secureConnect', resolve).once('error', reject))
    return new SmtpClient(secure) as SmtpClient & { socket: TLSSocket }
  }

  private onData(chunk: string): void {
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
  }

  next(): Promise<Reply> {
    const ready = this.replies.shift()
    if (ready) return Promise.resolve(ready)
    return new Promise((resolve) => this.waiters.push(resolve))
  }

  async command(line: string): Promise<Reply> {
    this.socket.write(`${line}\r\n`)
    return this.next()
  }

  /** DATA, the dot-stuffed body, and the final dot; returns the reply to the message. */
  async data(raw: string | Buffer): Promise<Reply> {
    const go = await this.command('DATA')
    if (go.code !== 354) return go
    const endsWithNewline = /\n$/.test(Buffer.isBuffer(raw) ? raw.subarray(-1).toString('latin1') : raw)
    this.writeBody(raw)
    this.socket.write(endsWithNewline ? '.\r\n' : '\r\n.\r\n')
    return this.next()
  }

  writeBody(raw: string | Buffer): void {
    this.socket.write(SmtpClient.dotStuffed(raw))
  }

  /** The message as DATA carries it: CRLF line ends, a leading dot doubled (no final dot). */
  static dotStuffed(raw: string | Buffer): Buffer {
    const text = Buffer.isBuffer(raw) ? raw.toString('latin1') : raw
    const normalized = text.replace(/\r?\n/g, '\r\n').replace(/^\./gm, '..')
    return Buffer.from(normalized, Buffer.isBuffer(raw) ? 'latin1' : 'utf8')
  }

  /** MAIL, RCPT for each recipient, and DATA if any was accepted, on this connection. */
  async transaction(envelope: { from?: string; to: string[] }, raw: string | Buffer): Promise<SendResult> {
    const mail = await this.command(`MAIL FROM:<${envelope.from ?? 'sender@example.com'}>`)
    const rcpt: Reply[] = []
    for (const to of envelope.to) rcpt.push(await this.command(`RCPT TO:<${to}>`))
    const data = rcpt.some((r) => r.code === 250) ? await this.data(raw) : null
    if (!data) await this.command('RSET')
    return { mail, rcpt, data }
  }

  /** QUIT, then the socket is gone; a connection the server already closed (after a 421) is only destroyed, never waited on. */
  async quit(): Promise<void> {
    if (!this.socket.destroyed && this.socket.readyState !== 'closed') await Promise.race([this.command('QUIT').catch(() => undefined), this.closed()])
    this.socket.destroy()
  }

  destroy(): void {
    this.socket.destroy()
  }
}

export interface SendResult {
  mail: Reply
  rcpt: Reply[]
  data: Reply | null
}

/** One whole transaction on a fresh connection. DATA is sent only if some RCPT was accepted. */
export async function sendMail(port: number, envelope: { from?: string; to: string[] }, raw: string | Buffer, localAddress?: string): Promise<SendResult> {
  const client = await SmtpClient.connect(port, '127.0.0.1', localAddress)
  try {
    await client.command('EHLO test.local')
    return await client.transaction(envelope, raw)
  } finally {
    await client.quit()
  }
}

/** A minimal RFC 5322 message. */
export function simpleMessage(fields: { from?: string; to: string; subject?: string; text?: string; headers?: Record<string, string> }): string {
  const lines = [
    `From: ${fields.from ?? 'Sender <sender@example.com>'}`,
    `To: ${fields.to}`,
    `Subject: ${fields.subject ?? 'Hello'}`,
    `Message-ID: <${Math.random().toString(16).slice(2)}@example.com>`,
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    ...Object.entries(fields.headers ?? {}).map(([k, v]) => `${k}: ${v}`),
    '',
    fields.text ?? 'Hello there',
  ]
  return lines.join('\r\n')
}
