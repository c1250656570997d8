/**
 * PROXY lines accepted and refused, so that a TRUSTED_PROXIES that misses the real proxy is
 * loud. With such a value every inbound connection's PROXY line is refused with 421 and the
 * senders' MTAs retry for days: mail stops, and before this nothing but an info line per
 * connection said so. Now:
 *
 * - every line counts in `pigeonhole_smtp_proxy_lines_total` by outcome;
 * - a refused line from a peer outside TRUSTED_PROXIES writes a warning naming that peer, at
 *   most once a minute (the count in between rides on the next one), so a flood of refusals
 *   cannot flood the log;
 * - /ready fails while PROXY lines came in the last minute and every one of them was refused.
 *   One accepted line in that minute (the real proxy is trusted) keeps it ready: a stranger
 *   sending a PROXY line of its own is refused, and logged, but is not a broken deployment.
 *
 * A second line from a client behind a trusted proxy is counted (`refused_repeated`) but is
 * neither warned about nor held against readiness: its proxy's own line was accepted.
 * Time comes from the injected clock.
 */
import type { Clock } from '../clock.ts'
import type { Logger } from '../log.ts'

/** The window of /ready's rule and the least time between two warnings. */
const PROXY_WINDOW_MS = 60_000

export type ProxyLineOutcome = 'accepted' | 'refused' | 'refused_repeated'

export class ProxyLineWatch {
  private lastAcceptedAt = Number.NEGATIVE_INFINITY
  private lastRefusedAt = Number.NEGATIVE_INFINITY
  private lastWarnedAt = Number.NEGATIVE_INFINITY
  /** Refusals not yet reported in a warning. */
  private unreported = 0

  constructor(
    private readonly clock: Clock,
    private readonly logger: Logger,
    /** TRUSTED_PROXIES as configured, quoted in the warning so the fix is in the line. */
    private readonly trustedProxies: string,
    private readonly count: (outcome: ProxyLineOutcome) => void,
  ) {}

  accepted(): void {
    this.lastAcceptedAt = this.clock.now()
    this.count('accepted')
  }

  /** A line from a peer outside TRUSTED_PROXIES (`peer` is the socket's own address). */
  refused(peer: string | undefined): void {
    const now = this.clock.now()
    this.lastRefusedAt = now
    this.unreported++
    this.count('refused')
    if (now - this.lastWarnedAt < PROXY_WINDOW_MS) return
    this.logger.warn('smtp_proxy_line_refused', {
      remote: peer,
      refused: this.unreported,
      trusted_proxies: this.trustedProxies,
      hint: 'a PROXY line came from a peer outside TRUSTED_PROXIES; if it is your proxy, add its network',
    })
    this.lastWarnedAt = now
    this.unreported = 0
  }

  /** A second PROXY line on a connection whose proxy already sent one. */
  refusedRepeated(): void {
    this.count('refused_repeated')
  }

  /** 'failed' while the last minute saw PROXY lines and every one was refused. */
  readiness(): 'ok' | 'failed' {
    const since = this.clock.now() - PROXY_WINDOW_MS
    return this.lastRefusedAt > since && this.lastAcceptedAt <= since ? 'failed' : 'ok'
  }
}
