/**
 * Refusals of console verbs. Kinds, not HTTP statuses: src/console maps each kind once.
 * `not_found` is also what another organisation's ids get, so they cannot be told apart.
 */
export type ConsoleErrorKind = 'not_found' | 'forbidden' | 'invalid' | 'conflict' | 'throttled' | 'unauthenticated'

export class ConsoleError extends Error {
  constructor(
    readonly kind: ConsoleErrorKind,
    message: string,
    /** Seconds until a throttled action may be tried again. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message)
    this.name = 'ConsoleError'
  }
}

export const notFound = () => new ConsoleError('not_found', 'Not found.')
