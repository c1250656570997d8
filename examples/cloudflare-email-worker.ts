/**
 * Cloudflare Email Worker for EMAIL_ROUTING=cloudflare: every inbox rule hands its mail to
 * this Worker (CLOUDFLARE_RULE_ACTION=worker, CLOUDFLARE_RULE_DESTINATION=<its name>),
 * and the Worker relays the message unchanged over SMTP to Pigeonhole's listener, with the
 * original envelope recipient. Workers may not connect to port 25, so it uses SMTP_PORT
 * (2525), which must be reachable from the Internet.
 *
 * A permanent refusal from Pigeonhole (unknown address, quota, size) is handed back to
 * the sending server with Pigeonhole's own text; anything else throws, so Cloudflare
 * reports a failure instead of silently dropping the message.
 *
 * Deploy (wrangler): name it as CLOUDFLARE_RULE_DESTINATION (default `pigeonhole-relay`),
 * set vars PIGEONHOLE_SMTP_HOST and PIGEONHOLE_SMTP_PORT, `wrangler deploy`.
 * The relay itself is tested against the real SMTP listener in test/routing/.
 */

/** What the Worker needs of a TCP socket (cloudflare:sockets' Socket has these). */
export interface RelaySocket {
  readable: ReadableStream<Uint8Array>
  writable: WritableStream<Uint8Array>
  close(): unknown
}

/** What the Worker needs of Cloudflare's ForwardableEmailMessage. */
export interface InboundEmail {
  readonly from: string
  readonly to: string
  readonly raw: ReadableStream<Uint8Array>
  setReject(reason: string): void
}

interface Env {
  PIGEONHOLE_SMTP_HOST: string
  PIGEONHOLE_SMTP_PORT?: string
}

class SmtpRefusal extends Error {
  constructor(
    readonly code: number,
    readonly text: string,
  ) {
    super(`${code} ${text}`)
  }
}

const DOT = new Uint8Array([46])
const END_OF_DATA = new Uint8Array([13, 10, 46, 13, 10])

/** Speaks one SMTP transaction over `socket`. Throws SmtpRefusal on any unexpected reply. */
export async function relay(message: Pick<InboundEmail, 'from' | 'to' | 'raw'>, socket: RelaySocket): Promise<void> {
  const writer = socket.writable.getWriter()
  const reader = socket.readable.getReader()
  const decoder = new TextDecoder()
  const encoder = new TextEncoder()
  let buffered = ''

  // A reply ends with the line whose code is followed by a space ("250 ok"), not "250-".
  async function expect(klass: number): Promise<void> {
    for (;;) {
      const last = /(?:^|\r\n)(\d{3}) ([^\r\n]*)\r\n/.exec(buffered)
      if (last) {
        buffered = buffered.slice(last.index + last[0].length)
        const code = Number(last[1])
        if (Math.floor(code / 100) !== klass) throw new SmtpRefusal(code, last[2] ?? '')
        return
      }
      const { value, done } = await reader.read()
      if (done) throw new Error('Pigeonhole closed the SMTP connection')
      buffered += decoder.decode(value, { stream: true })
    }
  }
  const command = async (line: string, klass: number) => {
    await writer.write(encoder.encode(`${line}\r\n`))
    await expect(klass)
  }

  try {
    await expect(2)
    await command('EHLO cloudflare-email-worker', 2)
    await command(`MAIL FROM:<${message.from}>`, 2)
    await command(`RCPT TO:<${message.to}>`, 2)
    await command('DATA', 3)
    // Bytes as received (8-bit safe); a line starting with "." gets a second one (RFC 5321 4.5.2).
    const raw = new Uint8Array(await new Response(message.raw).arrayBuffer())
    let from = 0
    for (let i = raw.indexOf(46); i !== -1; i = raw.indexOf(46, i + 1)) {
      if (i === 0 || raw[i - 1] === 10) {
        await writer.write(raw.subarray(from, i))
        await writer.write(DOT)
        from = i
      }
    }
    await writer.write(raw.subarray(from))
    const endsWithNewline = raw.length >= 2 && raw[raw.length - 2] === 13 && raw[raw.length - 1] === 10
    await writer.write(endsWithNewline ? END_OF_DATA.subarray(2) : END_OF_DATA)
    await expect(2)
    await command('QUIT', 2).catch(() => {})
  } finally {
    await socket.close()
  }
}

/** Relays, turning a permanent refusal into Cloudflare's rejection of the message. */
export async function deliver(message: InboundEmail, socket: RelaySocket): Promise<void> {
  try {
    await relay(message, socket)
  } catch (error) {
    if (error instanceof SmtpRefusal && error.code >= 500) return message.setReject(error.text)
    throw error
  }
}

export default {
  async email(message: InboundEmail, env: Env): Promise<void> {
    // Loaded here, so the module also imports outside the Workers runtime (tests).
    const { connect } = await import('cloudflare:sockets' as string)
    await deliver(
      message,
      connect({ hostname: env.PIGEONHOLE_SMTP_HOST, port: Number(env.PIGEONHOLE_SMTP_PORT ?? 2525) }),
    )
  },
}

export { SmtpRefusal }
