/**
 * Query parameter schemas. Values arrive as strings; the patterns accept exactly the valid
 * values so nothing is ever clamped, and http/errors.ts maps a failure to the parameter's
 * own error code.
 */
import { t } from 'elysia'
import { DomainError, type ErrorCode } from '../core/common/errors.ts'

/** Query parameter → the spec's code for an invalid value of it. */
export const QUERY_ERROR_CODES: Record<string, ErrorCode> = {
  limit: 'invalid_limit',
  cursor: 'invalid_cursor',
  include: 'invalid_include',
  wait_seconds: 'invalid_wait_seconds',
  sender: 'invalid_sender',
  sender_domain: 'invalid_sender_domain',
  received_after: 'invalid_received_after',
  subject: 'invalid_subject',
}

export const QUERY_ERROR_MESSAGES: Partial<Record<ErrorCode, string>> = {
  invalid_limit: 'limit must be an integer from 1 to 100.',
  invalid_cursor: 'cursor must be a next_cursor value returned by this listing.',
  invalid_include: 'include accepts only "content", together with limit=1.',
  invalid_wait_seconds: 'wait_seconds must be an integer from 0 to 180.',
  invalid_sender: 'sender must be an email address.',
  invalid_sender_domain: 'sender_domain must be a domain without "@" or whitespace.',
  invalid_received_after: 'received_after must be an RFC 3339 timestamp, e.g. 2026-11-22T10:00:00Z.',
  invalid_subject: 'subject must be given at most once.',
}

export const LimitQuery = t.Optional(
  t.String({ pattern: '^0*(?:[1-9][0-9]?|100)$', description: 'Page size, 1 to 100 (default 50).', examples: ['50'] }),
)
export const CursorQuery = t.Optional(
  t.String({ minLength: 1, maxLength: 512, description: 'A `next_cursor` from the previous page.' }),
)

const DEFAULT_PAGE_SIZE = 50
export const pageSize = (limit: string | undefined): number => (limit === undefined ? DEFAULT_PAGE_SIZE : Number(limit))

/**
 * The GET routes that read query parameters, and which ones. Elsewhere every parameter is
 * unknown and ignored: getInbox and getUsage have no 422 in the spec's status lists.
 */
const QUERY_ROUTES: ReadonlyArray<[RegExp, readonly string[]]> = [
  [/^\/v1\/inboxes\/?$/, ['limit', 'cursor']],
  [/^\/v1\/inboxes\/[^/]+\/messages\/?$/, Object.keys(QUERY_ERROR_CODES)],
]

/** Unknown parameters are ignored; a known one given twice is ambiguous, so it is refused. */
export function rejectRepeatedParameters(url: URL): void {
  const known = QUERY_ROUTES.find(([path]) => path.test(url.pathname))?.[1] ?? []
  for (const name of known) {
    if (url.searchParams.getAll(name).length > 1) {
      const code = QUERY_ERROR_CODES[name]!
      throw new DomainError(code, `${name} given more than once. ${QUERY_ERROR_MESSAGES[code] ?? ''}`.trim())
    }
  }
}

/** Query objects accept unknown parameters (ignored), like most REST APIs. */
export const queryObject = <P extends Parameters<typeof t.Object>[0]>(properties: P) =>
  t.Object(properties, { additionalProperties: true })
