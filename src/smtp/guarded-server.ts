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

  override _expectsProxyHeader(socket: Socket): boolean {
    return this.proxy?.expectsHeader(socket.remoteAddress) ?? false
  }

  /** smtp-server waits its idle timeout (reset by any byte) for the PROXY line; a trusted proxy gets the greeting deadline instead. */
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
    if (!id || !this.guard.admit(id, address)) {
      refuse(socket, this.refusal)
      return
    }
    super.connect(socket, socketOptions)
    for (const connection of this.connections) {
      if (connection.id !== id) continue
      this.guard.opened(connection)
      this.proxy?.refuseLateHeaders(connection)
      this.watchResets(connection, id)
      return
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
