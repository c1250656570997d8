/**
 * The viewer calls the same domain verbs as /v1, which refuse with DomainError codes.
 * The console shows them as its own kinds: any `*_not_found` is the same 404 as another
 * organisation's id, a bad value is 400, and every other refusal (quota, address taken,
 * provider down, disk full) is 409 with the verb's own message.
 */
import { Refusal } from '../core/refusals.ts'
import { DomainError } from '../core/errors.ts'

export function asConsoleError(error: unknown): unknown {
  if (!(error instanceof DomainError)) return error
  if (error.code === 'internal_error') return error // a 500; the verb has logged why (stored bytes that fail their check)
  if (error.code.endsWith('not_found')) return new Refusal('not_found', 'Not found.')
  if (error.code.startsWith('invalid_')) return new Refusal('invalid', error.message)
  return new Refusal('conflict', error.message, error.facts.retryAfterSeconds)
}
