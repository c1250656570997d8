/** Cookie reading and writing for the console: HttpOnly; SameSite=Lax; Path=/; Secure on https. */
export const SESSION_COOKIE = 'ph_session'
/** The console's theme chosen on the account page (`light` or `dark`; absent: follow the system). Not a secret. */
export const THEME_COOKIE = 'ph_theme'
export type Theme = 'light' | 'dark' | 'system'
export const readTheme = (request: Request): Theme => {
  const value = readCookie(request, THEME_COOKIE)
  return value === 'light' || value === 'dark' ? value : 'system'
}

/** Double-submit token for forms shown before sign-in (sign-in, setup, invite). */
export const ANON_CSRF_COOKIE = 'ph_csrf'
/** The last refused form of this browser, sealed, for the page its POST redirected to. */
export const FAILED_FORM_COOKIE = 'ph_failed'

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
