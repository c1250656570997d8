/**
 * Sends one message as a real sender (an MTA, or the spec's clients) does: a failure before
 * the message is acknowledged is retried on a new connection, because nothing was accepted
 * yet. Used where servers stop and start under the traffic (the rolling restart), so that a
 * test tells a deploy's ordinary turbulence from a lost message.
 *
 * What is retried, and why it is sound:
 * - The connection closing or failing before a reply the sender waits for, at any step, the
 *   greeting included: a stopping server refuses or cuts connections it has not served, and
 *   a proxy closes a client's connection whose backend went away. After the final dot this
 *   is RFC 5321's lost-reply case: the sender cannot know, and sends again; at worst the
 *   message is stored twice, never lost.
 * - `421` (the server closes the channel: it is stopping, or a session deadline) and `451`
 *   (a local error, e.g. PostgreSQL mode's storage unavailable), at any step: both say "not
 *   accepted, try later".
 *
 * Everything else fails at once, so a retry never hides a server's mistake: any `5xx` (a
 * permanent refusal), any other `4xx` (a mailbox or quota limit, which a restart does not
 * explain), an unexpected code, a connect that fails (the caller's proxy always listens), a
 * reply that does not come within `attemptTimeoutMs` on an open connection (a hang), and
 * running out of attempts.
 */
import { type Reply, SmtpClient, SmtpConnectionClosedError } from './smtp.ts'

/** Reply codes after which a sender tries again: the server says nothing was accepted. */
const RETRIED_CODES = new Set([421, 451])

export interface RetryingSendOptions {
  /** Connections to try at most; the last failure then fails the send. */
  attempts?: number
  /** Bound on one attempt, greeting to final reply: beyond it the server is hung, not stopping. */
  attemptTimeoutMs?: number
  /** Pause before the next attempt, as a sender backs off. */
  pauseMs?: number
  /**
   * Retry only a connection closed before its greeting (no byte exchanged, so nothing can
   * have been accepted); every other failure above then fails the send at once.
   */
  onlyClosedBeforeGreeting?: boolean
}

export interface RetriedSend {
  /** The `250` to the message. */
  reply: Reply
  /** Each failure that was retried, in order, as "why (attempt n)". */
  retried: string[]
}

/** A failure no retry may cover: the message was refused, the server hung, or attempts ran out. */
export class SendFailedError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'SendFailedError'
  }
}

/** A failure that leaves the message unaccepted, worth another connection. */
class Retryable extends Error {
  constructor(
    message: string,
    /** The connection closed before the server said anything. */
    readonly closedBeforeGreeting = false,
  ) {
    super(message)
  }
}

function expectReply(reply: Reply, step: string, expected: number): void {
  if (reply.code === expected) return
  const described = `${step} answered ${reply.code} ${reply.text}`
  if (RETRIED_CODES.has(reply.code)) throw new Retryable(described)
  throw new SendFailedError(described)
}

async function attempt(
  port: number,
  envelope: { from: string; to: string },
  raw: string | Buffer,
  timeoutMs: number,
): Promise<Reply> {
  let client: SmtpClient | null = null
  let timedOut = false
  let awaiting = 'the connection'
  // Past the bound the connection is cut, which fails the step waiting on it; `timedOut` then
  // turns that failure into a hang's, which is never retried.
  const { promise: expired, reject: expire } = Promise.withResolvers<never>()
  expired.catch(() => undefined)
  const timer = setTimeout(() => {
    timedOut = true
    client?.destroy()
    expire(new SendFailedError(`no answer within ${timeoutMs} ms while waiting for ${awaiting}`))
  }, timeoutMs)
  const step = async (name: string, work: () => Promise<Reply>, expected: number) => {
    awaiting = `the reply to ${name}`
    expectReply(await work(), name, expected)
  }
  try {
    awaiting = 'the greeting'
    const opening = SmtpClient.open(port)
    const opened = await Promise.race([opening, expired]).catch((error) => {
      if (timedOut)
        void opening.then(
          ({ client: late }) => late.destroy(),
          () => undefined,
        )
      throw error
    })
    client = opened.client
    expectReply(opened.greeting, 'the greeting', 220)
    const open = client
    await step('EHLO', () => open.command('EHLO sender.test'), 250)
    await step('MAIL', () => open.command(`MAIL FROM:<${envelope.from}>`), 250)
    await step('RCPT', () => open.command(`RCPT TO:<${envelope.to}>`), 250)
    await step('DATA', () => open.command('DATA'), 354)
    awaiting = 'the reply to the message'
    const stored = await open.message(raw)
    expectReply(stored, 'the message', 250)
    // Acknowledged: whatever happens to QUIT (the server stopping, the bound) changes nothing.
    await open.quit()
    return stored
  } catch (error) {
    if (timedOut) throw new SendFailedError(`no answer within ${timeoutMs} ms while waiting for ${awaiting}`)
    if (error instanceof SmtpConnectionClosedError) throw new Retryable(error.message, awaiting === 'the greeting')
    throw error
  } finally {
    clearTimeout(timer)
    client?.destroy()
  }
}

/** One message to one recipient; resolves with the `250` and what was retried on the way. */
export async function sendRetrying(
  port: number,
  envelope: { from?: string; to: string },
  raw: string | Buffer,
  options: RetryingSendOptions = {},
): Promise<RetriedSend> {
  const { attempts = 5, attemptTimeoutMs = 10_000, pauseMs = 100, onlyClosedBeforeGreeting = false } = options
  const retried: string[] = []
  for (let n = 1; ; n++) {
    try {
      const reply = await attempt(
        port,
        { from: envelope.from ?? 'sender@example.com', to: envelope.to },
        raw,
        attemptTimeoutMs,
      )
      return { reply, retried }
    } catch (error) {
      if (!(error instanceof Retryable))
        throw error instanceof SendFailedError
          ? error
          : new SendFailedError(`attempt ${n}: ${error instanceof Error ? error.message : String(error)}`)
      if (onlyClosedBeforeGreeting && !error.closedBeforeGreeting)
        throw new SendFailedError(`attempt ${n}: ${error.message}`)
      retried.push(`${error.message} (attempt ${n})`)
      if (n >= attempts) throw new SendFailedError(`no attempt of ${attempts} was accepted: ${retried.join('; ')}`)
      await Bun.sleep(pauseMs)
    }
  }
}
