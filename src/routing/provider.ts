/**
 * Email routing provider: one exact rule per inbox address. The domain depends on this
 * interface only; EMAIL_ROUTING picks the implementation in the composition root.
 */
export interface RoutingProvider {
  readonly name: string
  /** Creates a rule delivering `address` to this service; returns the provider's rule id (null if it has none). */
  createRule(address: string): Promise<string | null>
  /** Removes a rule. A rule the provider no longer knows counts as removed. */
  deleteRule(ruleId: string | null, address: string): Promise<void>
}

/**
 * `rejected`: the provider answered with an error (HTTP 502 to our client).
 * `unavailable`: unreachable or timed out (HTTP 503).
 */
export class RoutingError extends Error {
  constructor(
    readonly kind: 'rejected' | 'unavailable',
    message: string,
  ) {
    super(message)
    this.name = 'RoutingError'
  }
}
