/**
 * SMTP_PROXY_PROTOCOL=on: whose PROXY line is believed. A PROXY line is a claim about
 * someone else's address, unauthenticated; believed from anyone, it let one client pass for
 * eight addresses past a per-address limit, and made every socket wait for a header that
 * silent ones never sent (forty of them filled the slots smtp-server keeps for sockets
 * before their session, locking out everyone else). So:
 *
 * - a peer in TRUSTED_PROXIES must open with the PROXY line, within the greeting deadline
 *   (smtp-server's own wait is the idle timeout, a minute, and any byte restarts it);
 * - any other peer is an ordinary SMTP client, counted, greeted and timed by its own
 *   address from the first moment; a PROXY line from it (or a second one from a client
 *   behind the proxy) is answered 421 and the connection closed, so a proxy missing from
 *   TRUSTED_PROXIES shows in the log at once instead of counting every sender as one.
 *
 * A trusted proxy's socket is not counted against the proxy's address while its line is
 * awaited: the proxy speaks for every sender, and a burst of connections accepted in one
 * turn of the event loop would otherwise refuse senders for the proxy's share. It is
 * bounded by the deadline and by smtp-server's cap on such sockets (SMTP_MAX_CLIENTS).
 *
 * Every line accepted or refused is told to the ProxyLineWatch (src/smtp/proxy-lines.ts),
 * which makes a TRUSTED_PROXIES that misses the real proxy loud.
 */
import { TrustedNetworks } from '../core/common/trusted-networks.ts'
import type { Logger } from '../log.ts'
import type { SmtpConnection } from './connection.ts'
import type { ProxyLineWatch } from './proxy-lines.ts'
import { GUARD_REPLIES } from './replies.ts'

type CommandHandler = (command: Buffer, callback: () => void) => void

export class ProxyTrust {
  private readonly networks: TrustedNetworks

  constructor(
    trustedProxies: string,
    /** Time a trusted proxy has to deliver its PROXY line (SMTP_GREETING_TIMEOUT_MS). */
    readonly headerDeadlineMs: number,
    private readonly logger: Logger,
    private readonly lines: ProxyLineWatch,
  ) {
    this.networks = TrustedNetworks.parse(trustedProxies)
  }

  /** True when this peer is a proxy that must open with a PROXY line. */
  expectsHeader(peer: string | undefined): boolean {
    return this.networks.trusts(peer)
  }

  headerTimedOut(peer: string | undefined): void {
    this.logger.info('smtp_refused', { reason: 'proxy_header_timeout', remote: peer })
  }

  /** For /ready: failed while every PROXY line of the last minute was refused. */
  readiness(): 'ok' | 'failed' {
    return this.lines.readiness()
  }

  /** A trusted proxy's PROXY line was read and believed (smtp-server parsed it before the session). */
  headerAccepted(): void {
    this.lines.accepted()
  }

  /**
   * Installs the answer to a PROXY command inside a session (smtp-server finds handlers by
   * name). `viaProxy`: the connection came through a trusted proxy, whose own line was
   * accepted, so a PROXY line now is its client's second one.
   */
  refuseLateHeaders(connection: SmtpConnection, viaProxy: boolean): void {
    const refused = () => (viaProxy ? this.lines.refusedRepeated() : this.lines.refused(connection.remoteAddress))
    const handler: CommandHandler = (_command, callback) => {
      refused()
      this.logger.info('smtp_refused', {
        session_id: connection.id,
        reason: 'proxy_header_refused',
        remote: connection.remoteAddress,
      })
      const reply = GUARD_REPLIES.proxy_header_refused
      connection.send(reply.code, reply.text) // a 421 also closes the connection
      callback()
    }
    ;(connection as unknown as { handler_PROXY: CommandHandler }).handler_PROXY = handler
    // A line that arrives before the greeting never reaches the handler: smtp-server answers
    // any early command `421 You talk too soon` unread. A proxy sends its line at once, so a
    // proxy missing from TRUSTED_PROXIES is often refused this way; it is a refused line all the same.
    const onCommand = connection._onCommand.bind(connection)
    connection._onCommand = (command, callback) => {
      if (!connection._ready && isProxyLine(command)) refused()
      onCommand(command, callback)
    }
  }
}

const isProxyLine = (command: Buffer | undefined) => /^PROXY /i.test((command ?? '').toString('latin1', 0, 6))
