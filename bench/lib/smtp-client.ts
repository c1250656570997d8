/**
 * A minimal SMTP client for load: one TCP connection, one command at a time, several
 * messages per connection. Written here (not nodemailer) so the client spends as little
 * of the shared two cores as possible, and identically against every target.
 */
import { createConnection, type Socket } from 'node:net'

export interface Reply {
  code: number
  text: string
  /** performance.now() when the last line of the reply was read. */
  at: number
}

export class SmtpClient {
  private buffer = ''
  private waiters: Array<{ resolve: (reply: Reply) => void; reject: (error: Error) => void }> = []
  private lines: string[] = []
  private failure: Error | null = null
  /** performance.now() when the last MAIL FROM was written. */
  mailAt = 0

  private constructor(private readonly socket: Socket) {
    socket.setNoDelay(true)
    socket.setEncoding('latin1')
    socket.on('data', (chunk: string) => this.onData(chunk))
    socket.on('error', (error) => this.fail(error))
    socket.on('close', () => this.fail(new Error('SMTP connection closed')))
  }

  static async connect(port: number, host = '127.0.0.1'): Promise<SmtpClient> {
    const socket = createConnection({ port, host })
    const client = new SmtpClient(socket)
    const greeting = await client.next()
    if (greeting.code !== 220) throw new Error(`SMTP greeting ${greeting.code} ${greeting.text}`)
    const ehlo = await client.command('EHLO bench.local')
    if (ehlo.code !== 250) throw new Error(`EHLO answered ${ehlo.code} ${ehlo.text}`)
    return client
  }

  /** Sends one message; resolves with the reply to the end of DATA (250 when accepted). */
  async send(from: string, to: string, headers: string, body: string): Promise<Reply> {
    this.mailAt = performance.now()
    const mail = await this.command(`MAIL FROM:<${from}>`)
    if (mail.code !== 250) return mail
    const rcpt = await this.command(`RCPT TO:<${to}>`)
    if (rcpt.code !== 250) {
      await this.command('RSET')
      return rcpt
    }
    const data = await this.command('DATA')
    if (data.code !== 354) return data
    const done = this.next()
    this.socket.write(headers)
    this.socket.write(body)
    this.socket.write('\r\n.\r\n')
    return done
  }

  command(line: string): Promise<Reply> {
    const reply = this.next()
    this.socket.write(`${line}\r\n`)
    return reply
  }

  close(): void {
    this.socket.end('QUIT\r\n')
    this.socket.destroySoon?.()
  }

  private next(): Promise<Reply> {
    if (this.failure) return Promise.reject(this.failure)
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }))
  }

  private onData(chunk: string): void {
    this.buffer += chunk
    for (let end = this.buffer.indexOf('\r\n'); end >= 0; end = this.buffer.indexOf('\r\n')) {
      const line = this.buffer.slice(0, end)
      this.buffer = this.buffer.slice(end + 2)
      this.lines.push(line)
      // "250-..." continues a multi-line reply; "250 ..." ends it.
      if (line[3] === '-') continue
      const reply: Reply = {
        code: Number(line.slice(0, 3)),
        text: this.lines.map((l) => l.slice(4)).join('\n'),
        at: performance.now(),
      }
      this.lines = []
      this.waiters.shift()?.resolve(reply)
    }
  }

  private fail(error: Error): void {
    if (this.failure) return
    this.failure = error
    for (const waiter of this.waiters.splice(0)) waiter.reject(error)
  }
}
