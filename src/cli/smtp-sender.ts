/**
 * A plain SMTP client (no TLS, no AUTH): the canary's sender, and the year-of-use script's,
 * which sends many messages over one connection as a test suite's mailer does. Every reply
 * is checked; anything but the expected code throws with the server's line. A connection or
 * reply that takes longer than `timeoutMs` fails rather than hanging.
 */
import { connect, type Socket } from 'node:net'

export class SmtpSender {
  private buffered = ''
  private waiting: { resolve: (line: string) => void; reject: (error: Error) => void }[] = []
  private lines: string[] = []

  private constructor(private readonly socket: Socket) {
    socket.setEncoding('latin1')
    socket.on('data', (chunk: string) => {
      this.buffered += chunk
      let end = this.buffered.indexOf('\r\n')
      while (end >= 0) {
        const line = this.buffered.slice(0, end)
        this.buffered = this.buffered.slice(end + 2)
        // Multi-line replies (250-…) end at the line whose code is followed by a space.
        if (/^\d{3} /.test(line) || !/^\d{3}-/.test(line)) {
          const next = this.waiting.shift()
          if (next) next.resolve(line)
          else this.lines.push(line)
        }
        end = this.buffered.indexOf('\r\n')
      }
    })
    let failure: Error | undefined
    socket.on('error', (error) => {
      failure = error
    })
    socket.on('close', () => {
      this.closed = failure ?? new Error('the SMTP server closed the connection')
      for (const waiter of this.waiting.splice(0)) waiter.reject(this.closed)
    })
  }

  static async open(
    port: number,
    host = '127.0.0.1',
    options: { helo?: string; timeoutMs?: number } = {},
  ): Promise<SmtpSender> {
    const timeoutMs = options.timeoutMs ?? 30_000
    const socket = await new Promise<Socket>((resolve, reject) => {
      const s = connect({ port, host }, () => resolve(s))
      s.once('error', reject)
      s.setTimeout(timeoutMs, () => s.destroy(new Error(`no answer from ${host}:${port} within ${timeoutMs / 1000} s`)))
    })
    socket.on('error', () => {}) // reported through the pending reply, by the close that follows
    const sender = new SmtpSender(socket)
    await sender.expect(220)
    await sender.command(`EHLO ${options.helo ?? 'localhost'}`, 250)
    return sender
  }

  private closed: Error | undefined

  private reply(): Promise<string> {
    const ready = this.lines.shift()
    if (ready !== undefined) return Promise.resolve(ready)
    if (this.closed) return Promise.reject(this.closed)
    return new Promise((resolve, reject) => this.waiting.push({ resolve, reject }))
  }

  private async expect(code: number): Promise<string> {
    const line = await this.reply()
    if (!line.startsWith(String(code))) throw new Error(`SMTP: expected ${code}, got "${line}"`)
    return line
  }

  async command(line: string, code: number): Promise<string> {
    this.socket.write(`${line}\r\n`)
    return this.expect(code)
  }

  /** Sends one message; `raw` uses CRLF line ends. Resolves with the 250 line. */
  async send(from: string, to: string, raw: Buffer): Promise<string> {
    await this.command(`MAIL FROM:<${from}>`, 250)
    await this.command(`RCPT TO:<${to}>`, 250)
    await this.command('DATA', 354)
    // Dot-stuffing: a line that starts with '.' gets another.
    const body = Buffer.from(raw.toString('latin1').replace(/(^|\r\n)\./g, '$1..'), 'latin1')
    this.socket.write(
      Buffer.concat([body, Buffer.from(body.subarray(-2).toString() === '\r\n' ? '.\r\n' : '\r\n.\r\n')]),
    )
    return this.expect(250)
  }

  async close(): Promise<void> {
    await this.command('QUIT', 221).catch(() => {})
    this.socket.destroy()
  }
}
