/**
 * smtp-server with admission decided when a socket is accepted. Its onConnect hook runs
 * only after the greeting delay, while the connection already counts against maxClients:
 * a reconnect loop from one address could keep every slot busy with connections that are
 * about to be refused. Deciding in connect() (the method smtp-server calls for every
 * accepted socket) refuses them before they take a slot.
 *
 * With SMTP_PROXY_PROTOCOL=on it also decides whose socket must open with a PROXY line
 * (src/smtp/proxy-trust.ts), through two underscore methods of smtp-server (pinned in
 * package.json; its typings declare them, so an upgrade that drops them fails typecheck).
 *
 * It also lets a stop finish the transactions in progress (see close()).
 */
import type { Socket } from 'node:net'
import { SMTPServer, type SMTPServerOptions } from 'smtp-server'
import type { SmtpConnection } from './connection.ts'
import type { ProxyTrust } from './proxy-trust.ts'

type SocketOptions = Parameters<SMTPServer['connect']>[1]

export interface ConnectionGuard {
  /** False refuses the socket (it never gets a session); true counts it in until closed(). */
  admit(sessionId: string, remoteAddress: string): boolean
  /** The admitted socket's session exists (smtp-server may still refuse it for maxClients). */
  opened(connection: SmtpConnection): void
}

/** How long a refused socket may stay open for its 421 to be delivered. */
const REFUSAL_LINGER_MS = 1_000

export class GuardedSmtpServer extends SMTPServer {
  /** close() began: only transactions in progress go on (see close()). */
  private draining = false
  /**
   * PostgreSQL mode, where other machines take the new connections during a stop: a session
   * this machine had accepted is served to its end instead (its greeting, EHLO and one whole
   * transaction), so a sender that never retries does not notice the deploy. After its message
   * (DATA) it gets the 421; QUIT always passes. New connections are refused at the socket.
   */
  serveAcceptedSessions = false

  constructor(
    options: SMTPServerOptions,
    private readonly guard: ConnectionGuard,
    private readonly refusal: string,
    /** Present with SMTP_PROXY_PROTOCOL=on. */
    private readonly proxy: ProxyTrust | null = null,
    /** Told after smtp-server resets a session's transaction (RSET, HELO/EHLO, after DATA). */
    private readonly transactionReset: ((sessionId: string) => void) | null = null,
  ) {
    // Whose PROXY line is awaited is decided below, never by smtp-server's own list.
    super({ ...options, useProxy: false })
  }

  /** For /ready (src/smtp/proxy-lines.ts); `not_configured` with SMTP_PROXY_PROTOCOL off. */
  proxyLineReadiness(): 'ok' | 'failed' | 'not_configured' {
    return this.proxy?.readiness() ?? 'not_configured'
  }

  override _expectsProxyHeader(socket: Socket): boolean {
    return this.proxy?.expectsHeader(socket.remoteAddress) ?? false
  }

  /**
   * smtp-server waits its idle timeout (reset by any byte) for the
   * PROXY line; a trusted proxy gets the greeting deadline instead.
   */
  override _acceptSocket(socket: Socket, handshake: boolean): false | (() => void) {
    const release = super._acceptSocket(socket, handshake)
    const proxy = this.proxy
    if (!release || !proxy || !this._expectsProxyHeader(socket)) return release
    const deadline = setTimeout(() => {
      proxy.headerTimedOut(socket.remoteAddress)
      socket.destroy()
    }, proxy.headerDeadlineMs)
    deadline.unref()
    socket.once('close', () => clearTimeout(deadline))
    return () => {
      clearTimeout(deadline)
      release()
    }
  }

  override connect(socket: Parameters<SMTPServer['connect']>[0], socketOptions?: SocketOptions): void {
    const id = socketOptions?.id
    const address = socketOptions?.remoteAddress ?? socket.remoteAddress ?? ''
    // From a trusted proxy, smtp-server has read and believed its PROXY line by now.
    const viaProxy = this._expectsProxyHeader(socket as Socket)
    if (viaProxy) this.proxy?.headerAccepted()
    if (!id || !this.guard.admit(id, address)) {
      refuse(socket, this.refusal)
      return
    }
    super.connect(socket, socketOptions)
    for (const connection of this.connections) {
      if (connection.id !== id) continue
      this.guard.opened(connection)
      this.proxy?.refuseLateHeaders(connection, viaProxy)
      this.watchResets(connection, id)
      this.refuseNewTransactionsWhenDraining(connection)
      return
    }
  }

  /**
   * smtp-server answers every command `421 Server shutting down` from the moment close() is
   * called, the RCPT or DATA of a transaction begun before it included: that message's sender
   * must send it again, though the stop is there to let transactions in progress finish. So
   * the drain is decided here, per command (refuseNewTransactionsWhenDraining): a session in a
   * transaction (MAIL accepted, not yet ended by the reply to its message or RSET) goes on;
   * any other command gets smtp-server's own 421, which closes the connection. Stopping the
   * listener and the closeTimeout that ends every session left are smtp-server's, unchanged.
   */
  override close(callback?: (() => void) | null): void {
    super.close(callback)
    this.draining = true
    // smtp-server's per-command 421 test reads this field; its timer is held here instead and
    // cleared, as smtp-server clears it, once the last connection has gone.
    const forcedEnd = this._closeTimeout
    this._closeTimeout = false
    this.server.once('close', () => {
      if (forcedEnd) clearTimeout(forcedEnd)
    })
  }

  private refuseNewTransactionsWhenDraining(connection: SmtpConnection): void {
    const onCommand = connection._onCommand.bind(connection)
    // Serving accepted sessions: whether this one has sent its message since the drain began.
    let sentDuringDrain = false
    connection._onCommand = (command, callback) => {
      const name = (command ?? '').toString().split(' ')[0]!.toUpperCase()
      // A STARTTLS handshake in flight is smtp-server's to handle (it discards such bytes).
      // Before the greeting (SMTP_GREETING_DELAY_MS) the session has no envelope yet.
      if (!this.draining || connection._upgrading || connection.session.envelope?.mailFrom) {
        if (this.draining && name === 'DATA') sentDuringDrain = true
        onCommand(command, callback)
        return
      }
      if (this.serveAcceptedSessions && (name === 'QUIT' || !sentDuringDrain)) {
        onCommand(command, callback)
        return
      }
      connection.send(421, 'Server shutting down', name) // 421 also closes the connection
    }
  }

  /**
   * smtp-server has no hook for RSET; its handler ends in _resetSession, which also runs for
   * HELO/EHLO and after DATA. Reservations held in the database must go at that moment, not
   * at the next command or the disconnect (in memory, their isLive check covers it lazily).
   */
  private watchResets(connection: SmtpConnection, id: string): void {
    const onReset = this.transactionReset
    if (!onReset) return
    const internals = connection as unknown as { _resetSession(): void }
    const reset = internals._resetSession.bind(connection)
    internals._resetSession = () => {
      reset()
      onReset(id)
    }
  }
}

function refuse(socket: Socket, reply: string): void {
  socket.on('error', () => {}) // the client may be gone already
  socket.resume() // whatever it sends is discarded, never buffered
  socket.end(`${reply}\r\n`)
  setTimeout(() => socket.destroy(), REFUSAL_LINGER_MS).unref()
}
