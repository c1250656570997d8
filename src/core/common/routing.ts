/**
 * The email routing port: one exact rule per inbox address. The domain depends on this
 * interface only; EMAIL_ROUTING picks the implementation (src/routing/) in the
 * composition root.
 */
import { DomainError } from './errors.ts'

export interface RoutingProvider {
  readonly name: string
  /** Creates a rule delivering `address` to this service; returns the provider's rule id (null if it has none). */
  createRule(address: string): Promise<string | null>
  /** Removes a rule. A rule the provider no longer knows counts as removed. */
  deleteRule(ruleId: string | null, address: string): Promise<void>
}

/**
 * `rejected`: the provider answered with an error.
 * `unavailable`: it could not be reached or timed out.
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

/** What the client is told when the provider failed to create or delete a rule. */
export function routingFailure(error: unknown, action: 'create' | 'delete'): DomainError {
  const kind = error instanceof RoutingError ? error.kind : 'unavailable'
  return new DomainError(
    'email_routing_unavailable',
    `The email routing provider could not ${action} the rule for this address ` +
      `(${kind === 'rejected' ? 'it answered with an error' : 'it could not be reached'}); retry later.`,
    { routing: kind },
  )
}
