/**
 * CORS per the spec: the console origin, one wildcard host family, and http://localhost or
 * http://127.0.0.1 with any port. Anything else gets no grant, so browser code from other
 * origins cannot read responses. Written by hand because the rules are this exact list.
 */
const LOCAL_ORIGIN = /^http:\/\/(localhost|127\.0\.0\.1)(:\d{1,5})?$/

interface CorsPolicy {
  allows(origin: string): boolean
}

export function corsPolicy(consoleOrigin: string, wildcardOrigin: string): CorsPolicy {
  let family: RegExp | null = null
  if (wildcardOrigin) {
    const [, scheme, suffix] = /^(https?):\/\/\*\.(.+)$/.exec(wildcardOrigin)!
    const escaped = suffix!.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
    family = new RegExp(
      `^${scheme}://[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*\\.${escaped}(:\\d{1,5})?$`,
      'i',
    )
  }
  return {
    allows: (origin) =>
      LOCAL_ORIGIN.test(origin) ||
      (consoleOrigin !== '' && origin === consoleOrigin) ||
      (family?.test(origin) ?? false),
  }
}

export const CORS_ALLOW_METHODS = 'GET, POST, DELETE, OPTIONS'
export const CORS_ALLOW_HEADERS = 'Authorization, Content-Type, Idempotency-Key'
export const CORS_EXPOSE_HEADERS = 'X-Request-Id, Retry-After'
