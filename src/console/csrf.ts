/**
 * CSRF form tokens (OWASP's synchronizer pattern). Signed in, the token is an HMAC of the
 * session token, which only the cookie holds: nothing extra to store, and it changes with
 * the session. Before sign-in, a random cookie is repeated in the form (double submit).
 * Both are checked with the Origin (security.ts) on every POST.
 */
import { createHmac, timingSafeEqual } from 'node:crypto'

export const CSRF_FIELD = '_csrf'

export const sessionCsrfToken = (sessionToken: string): string =>
  createHmac('sha256', sessionToken).update('pigeonhole console csrf').digest('base64url')

export function tokensMatch(given: string | null | undefined, expected: string | undefined): boolean {
  if (!given || !expected) return false
  const a = Buffer.from(given)
  const b = Buffer.from(expected)
  return a.length === b.length && timingSafeEqual(a, b)
}
