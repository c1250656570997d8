/**
 * Request paths as the request logs write them. A log is read by more people, and kept
 * longer, than the secrets in some paths deserve: an invite link's token lets whoever holds
 * it join an organisation. So every segment that carries a secret is replaced before the
 * path is logged, and queries (the setup link's `?token=`) are never logged at all.
 */

/** Paths whose segment after this prefix is a bearer secret, whatever shape it has. */
const SECRET_AFTER = ['/console/invites/']
/** The tokens we hand out (43 base64url characters) and API keys, wherever they appear. */
const TOKEN_SEGMENT = /^[A-Za-z0-9_-]{43}$/
const API_KEY_SEGMENT = /^(ph_live_[0-9a-f]{16})_.*/

export const REDACTED = '[redacted]'

export function loggablePath(path: string): string {
  const end = path.search(/[?#]/)
  const bare = end < 0 ? path : path.slice(0, end)
  for (const prefix of SECRET_AFTER) {
    if (bare.startsWith(prefix) && bare.length > prefix.length) {
      const next = bare.indexOf('/', prefix.length)
      return prefix + REDACTED + (next < 0 ? '' : redactSegments(bare.slice(next)))
    }
  }
  return redactSegments(bare)
}

function redactSegments(path: string): string {
  return path
    .split('/')
    .map((segment) => {
      if (TOKEN_SEGMENT.test(segment)) return REDACTED
      const key = API_KEY_SEGMENT.exec(segment)
      return key ? `${key[1]}_${REDACTED}` : segment
    })
    .join('/')
}
