/**
 * A small raw SMTP client over TCP for tests: every reply code and text is visible, and
 * a test can stop at any step (RSET, QUIT, drop the connection mid-DATA).
 */
import { connect, type Socket } from 'node:net'
import { type ConnectionOptions, connect as connectTls, type TLSSocket } from 'node:tls'

/** How much of a message writePaced hands the socket at a time. */
const PACED_WRITE_BYTES = 64 * 1024

export interface Reply {
  code: number
  text: string
}

export class SmtpClient {
  private buffer = ''
  private waiters: Array<{ awaiting: string; resolve: (reply: Reply) => void; reject: (error: Error) => void }> = []
  private replies: Reply[] = []
  private lines: string[] = []
  /** Set once the socket closed (with the error that closed it, if any): no reply can come after it. */
  private ended: { error?: Error } | null = null

  private constructor(readonly socket: Socket) {
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => this.onData(chunk))
    // An error is always followed by 'close'; it is kept to say why the connection ended.
    let failure: Error | undefined
    socket.on('error', (error) => {
      failure = error
    })
    socket.on('close', () => this.onClose(failure))
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
  static async open(
    port: number,
    localAddress?: string,
    host = '127.0.0.1',
    preamble?: string,
  ): Promise<{ client: SmtpClient; greeting: Reply }> {
    const socket = connect({ port, host, localAddress })
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve)
      socket.once('error', reject)
    })
    const client = new SmtpClient(socket)
    if (preamble) socket.write(preamble)
    return { client, greeting: await client.next('the greeting') }
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
      if (waiter) waiter.resolve(reply)
      else this.replies.push(reply)
    }
  }

  /**
   * A connection that closes (or fails) with replies still awaited fails them, naming what each
   * waited for, as a real sender sees a closed connection: a failure it may retry, never a wait
   * without end. Replies that arrived before the close are still handed out first.
   */
  private onClose(error: Error | undefined): void {
    this.ended = { error }
    for (const waiter of this.waiters.splice(0)) waiter.reject(this.closedError(waiter.awaiting))
  }

  private closedError(awaiting: string): Error {
    const why = this.ended?.error ? ` (${this.ended.error.message})` : ''
    return new SmtpConnectionClosedError(`SMTP connection closed before ${awaiting}${why}`, awaiting)
  }

  /** The next reply; rejects with SmtpConnectionClosedError if the connection closes first. */
  next(awaiting = 'the next reply'): Promise<Reply> {
    const ready = this.replies.shift()
    if (ready) return Promise.resolve(ready)
    if (this.ended) return Promise.reject(this.closedError(awaiting))
    return new Promise((resolve, reject) => this.waiters.push({ awaiting, resolve, reject }))
  }

  async command(line: string): Promise<Reply> {
    if (!this.ended) this.socket.write(`${line}\r\n`)
    return this.next(`the reply to ${line.split(' ')[0]}`)
  }

  /** DATA, the dot-stuffed body, and the final dot; returns the reply to the message. */
  async data(raw: string | Buffer): Promise<Reply> {
    const go = await this.command('DATA')
    if (go.code !== 354) return go
    return this.message(raw)
  }

  /** After DATA's 354: the dot-stuffed body and the final dot; returns the reply to the message. */
  message(raw: string | Buffer): Promise<Reply> {
    const endsWithNewline = /\n$/.test(Buffer.isBuffer(raw) ? raw.subarray(-1).toString('latin1') : raw)
    this.writeBody(raw)
    this.socket.write(endsWithNewline ? '.\r\n' : '\r\n.\r\n')
    return this.next('the reply to the message (after the final dot)')
  }

  /**
   * After DATA's 354: `wire` (dot-stuffed, with its final dot) written as a sender's socket
   * takes it, 64 KiB at a time, stopping early should the server answer first; returns that
   * answer. One write of a 10 MiB message copies it inside the first turn a test measures:
   * the client's cost, not the server's.
   */
  async writePaced(wire: Uint8Array): Promise<Reply> {
    let answered = false
    const replied = this.next('the reply to the message (after the final dot)').finally(() => (answered = true))
    for (let at = 0; at < wire.byteLength && !answered; at += PACED_WRITE_BYTES) {
      if (!this.socket.write(wire.subarray(at, at + PACED_WRITE_BYTES)))
        await Promise.race([new Promise((resolve) => this.socket.once('drain', resolve)), replied])
    }
    return replied
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

  async quit(): Promise<void> {
    await this.command('QUIT').catch(() => undefined)
    this.socket.destroy()
  }

  destroy(): void {
    this.socket.destroy()
  }
}

/** The connection closed (or failed) before a reply the client waited for: nothing was acknowledged by it. */
export class SmtpConnectionClosedError extends Error {
  constructor(
    message: string,
    /** What the client waited for: "the greeting", "the reply to RCPT", … */
    readonly awaiting: string,
  ) {
    super(message)
    this.name = 'SmtpConnectionClosedError'
  }
}

export interface SendResult {
  mail: Reply
  rcpt: Reply[]
  data: Reply | null
}

/** One whole transaction on a fresh connection. DATA is sent only if some RCPT was accepted. */
export async function sendMail(
  port: number,
  envelope: { from?: string; to: string[] },
  raw: string | Buffer,
  localAddress?: string,
): Promise<SendResult> {
  const client = await SmtpClient.connect(port, '127.0.0.1', localAddress)
  try {
    await client.command('EHLO test.local')
    return await client.transaction(envelope, raw)
  } finally {
    await client.quit()
  }
}

/** A minimal RFC 5322 message. */
export function simpleMessage(fields: {
  from?: string
  to: string
  subject?: string
  text?: string
  headers?: Record<string, string>
}): string {
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

/** Writes `text` to `client` one byte every `everyMs` (a slow client) until the connection closes; returns the stop. */
export function trickle(client: SmtpClient, text: string, everyMs = 25): () => void {
  let at = 0
  const timer = setInterval(() => {
    if (client.socket.destroyed) return clearInterval(timer)
    client.socket.write(text[at++ % text.length]!)
  }, everyMs)
  return () => clearInterval(timer)
}
