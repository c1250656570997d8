/**
 * Refusals of the account verbs (organisations, keys, users, sessions, members, setup), the
 * neutral sibling of DomainError (errors.ts): DomainError carries the /v1 spec's codes,
 * a Refusal one of a few kinds that every caller maps exhaustively once (the console to a
 * page and status, the CLI to a message and exit code). Kinds, not statuses.
 * `not_found` is also what another organisation's ids get, so they cannot be told apart.
 */
export type RefusalKind = 'not_found' | 'forbidden' | 'invalid' | 'conflict' | 'throttled' | 'unauthenticated'

export class Refusal extends Error {
  constructor(
    readonly kind: RefusalKind,
    message: string,
    /** Seconds until a throttled action may be tried again. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message)
    this.name = 'Refusal'
  }
}

export const notFound = () => new Refusal('not_found', 'Not found.')
