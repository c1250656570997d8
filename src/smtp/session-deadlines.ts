/**
 * The clocks of one SMTP session, so that no client can hold a connection by being slow:
 * EHLO/HELO within the greeting time, each further step (MAIL, RCPT, DATA) within the
 * command time, the message from DATA to the final dot within the DATA time, and the
 * whole session within its lifetime. smtp-server's own idle timeout is reset by every
 * byte, so a client trickling one byte a second, or sending NOOP after NOOP, would never
 * reach it; these deadlines are reset only by real progress.
 *
 * While the server owes the reply (a message being parsed and stored) no deadline runs:
 * cutting the connection then could lose the 250 of a stored message. A session whose
 * lifetime ends in that moment is closed right after the reply.
 */
export type DeadlineReason = 'greeting_timeout' | 'command_timeout' | 'data_timeout' | 'session_timeout'

export interface SessionTimeouts {
  greetingMs: number
  commandMs: number
  dataMs: number
  sessionMs: number
}

/** What the deadlines need of smtp-server's connection object. */
export interface Expirable {
  hostNameAppearsAs: string | false
}

export class SessionDeadlines {
  private phase: 'greeting' | 'command' | 'data' | 'server' = 'greeting'
  private step: ReturnType<typeof setTimeout> | undefined
  private readonly lifetime: ReturnType<typeof setTimeout>
  private lifetimeOver = false
  private over = false

  constructor(
    connection: Expirable,
    private readonly timeouts: SessionTimeouts,
    private readonly expire: (reason: DeadlineReason) => void,
  ) {
    this.arm(timeouts.greetingMs, () =>
      connection.hostNameAppearsAs ? this.progressed() : this.end('greeting_timeout'),
    )
    this.lifetime = setTimeout(() => {
      this.lifetimeOver = true
      // DATA has its own deadline; after it the reply comes first (see replied()).
      if (this.phase === 'greeting' || this.phase === 'command') this.end('session_timeout')
    }, timeouts.sessionMs)
    this.lifetime.unref?.()
  }

  /** MAIL or RCPT was answered: the client has the command time for its next step. */
  progressed(): void {
    if (this.lifetimeOver) {
      this.end('session_timeout')
      return
    }
    this.phase = 'command'
    this.arm(this.timeouts.commandMs, () => this.end('command_timeout'))
  }

  dataStarted(): void {
    this.phase = 'data'
    this.arm(this.timeouts.dataMs, () => this.end('data_timeout'))
  }

  /** The final dot arrived: the reply is ours to give, no deadline runs. */
  dataEnded(): void {
    this.phase = 'server'
    this.clearStep()
  }

  /** The reply to a message was sent. */
  replied(): void {
    this.progressed()
  }

  stop(): void {
    this.over = true
    this.clearStep()
    clearTimeout(this.lifetime)
  }

  private end(reason: DeadlineReason): void {
    if (this.over) return
    this.stop()
    this.expire(reason)
  }

  private arm(ms: number, fire: () => void): void {
    if (this.over) return
    this.clearStep()
    this.step = setTimeout(fire, ms)
    this.step.unref?.()
  }

  private clearStep(): void {
    if (this.step) clearTimeout(this.step)
    this.step = undefined
  }
}
