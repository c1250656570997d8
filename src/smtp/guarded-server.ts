/**
 * smtp-server with admission decided when a socket is accepted. Its onConnect hook runs
 * only after the greeting delay, while the connection already counts against maxClients:
 * a reconnect loop from one address could keep every slot busy with connections that are
 * about to be refused. Deciding in connect() (the method smtp-server calls for every
 * accepted socket) refuses them before they take a slot.
 */
import type { Socket } from 'node:net'
import { SMTPServer, type SMTPServerOptions } from 'smtp-server'

export type SmtpConnection = SMTPServer['connections'] extends Set<infer C> ? C : never
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
  ) {
    super(options)
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
      return
    }
  }
}

function refuse(socket: Socket, reply: string): void {
  socket.on('error', () => {}) // the client may be gone already
  socket.resume() // whatever it sends is discarded, never buffered
  socket.end(`${reply}\r\n`)
  setTimeout(() => socket.destroy(), REFUSAL_LINGER_MS).unref()
}
