/** Cookie reading and writing for the console: HttpOnly; SameSite=Lax; Path=/; Secure on https. */

/** The console's cookies, by what each holds. */
export interface CookieNames {
  session: string
  /** Double-submit token for forms shown before sign-in (sign-in, setup, invite). */
  csrf: string
  /** The last refused form of this browser, sealed, for the page its POST redirected to. */
  failed: string
  /** Prefix of the cookie holding a value shown once (shown-once.ts). */
  shown: string
}

const LOOPBACK = /^(localhost|[a-z0-9-]+\.localhost|127(\.\d{1,3}){3}|\[::1\])$/i

/**
 * Cookies belong to a host, not to a host and port: two servers on one machine (two
 * projects' test stacks on localhost) would overwrite each other's session and sign each
 * other out. So when BASE_URL is a loopback address each name carries the port
 * (`ph_session_8080`). A public deployment has a host of its own and keeps the plain names.
 */
export function cookieNamesFor(baseUrl: string): CookieNames {
  const url = new URL(baseUrl)
  const port = url.port || (url.protocol === 'https:' ? '443' : '80')
  const suffix = LOOPBACK.test(url.hostname) ? `_${port}` : ''
  return {
    session: `ph_session${suffix}`,
    csrf: `ph_csrf${suffix}`,
    failed: `ph_failed${suffix}`,
    shown: `ph_shown${suffix}_`,
  }
}

/** The console's theme chosen on the account page (`light` or `dark`; absent: follow the system). Not a secret. */
export const THEME_COOKIE = 'ph_theme'
export type Theme = 'light' | 'dark' | 'system'
export const readTheme = (request: Request): Theme => {
  const value = readCookie(request, THEME_COOKIE)
  return value === 'light' || value === 'dark' ? value : 'system'
}

export function readCookie(request: Request, name: string): string | undefined {
  const header = request.headers.get('cookie')
  if (!header) return undefined
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim()
  }
  return undefined
}

/** The names of the cookies the request carries. */
export function cookieNames(request: Request): string[] {
  const header = request.headers.get('cookie')
  if (!header) return []
  return header
    .split(';')
    .filter((part) => part.includes('='))
    .map((part) => part.slice(0, part.indexOf('=')).trim())
    .filter((name) => name !== '')
}

export function cookie(name: string, value: string, options: { secure: boolean; maxAgeSeconds?: number }): string {
  const parts = [`${name}=${value}`, 'HttpOnly', 'SameSite=Lax', 'Path=/']
  if (options.maxAgeSeconds !== undefined) parts.push(`Max-Age=${Math.max(0, Math.floor(options.maxAgeSeconds))}`)
  if (options.secure) parts.push('Secure')
  return parts.join('; ')
}

export const clearCookie = (name: string, secure: boolean) => cookie(name, '', { secure, maxAgeSeconds: 0 })
