/**
 * Checks the parts of a request that Bun passes through unchecked before anything parses
 * its URL: the Host header (RFC 9112 §3.2: exactly one, and a valid host[:port]) and the
 * method. A malformed request answers 400 with the usual envelope instead of throwing
 * inside `new URL()`.
 */

export class HttpProtocolError extends Error {
  constructor(
    readonly status: 400 | 408,
    readonly code: 'bad_request' | 'request_timeout',
    message: string,
  ) {
    super(message)
    this.name = 'HttpProtocolError'
  }
}

// reg-name, IPv4 or a bracketed IPv6 literal, then an optional port. Both alternatives are
// single character classes with no nesting, so matching is linear in the header's length.
const HOST = /^(?:\[[0-9A-Fa-f:.]{2,45}\]|[A-Za-z0-9\-._~%!$&'()*+;=]{1,255})(?::(\d{1,5}))?$/

function checkHost(host: string | null): void {
  if (host === null) throw new HttpProtocolError(400, 'bad_request', 'The Host header is required.')
  // Bun joins repeated headers with ", "; a comma is never valid inside a host.
  if (host.includes(',')) throw new HttpProtocolError(400, 'bad_request', 'The Host header must be given exactly once.')
  const match = HOST.exec(host)
  if (!match || (match[1] !== undefined && Number(match[1]) > 65535)) {
    throw new HttpProtocolError(400, 'bad_request', 'The Host header is not a valid host[:port].')
  }
}

/**
 * The request's path, read from the URL text without `new URL()` (which throws on the
 * hosts refused above). Bun builds `request.url` as scheme://host + target.
 */
function pathOf(url: string): string {
  const afterScheme = url.indexOf('://')
  const slash = url.indexOf('/', afterScheme < 0 ? 0 : afterScheme + 3)
  if (slash < 0) return '/'
  const end = url.slice(slash).search(/[?#]/)
  return end < 0 ? url.slice(slash) : url.slice(slash, slash + end)
}

/**
 * Validates the request line and Host; returns the path (for routing decisions and logs)
 * and the parsed URL, so the caller need not parse it again.
 */
export function checkRequestTarget(request: Request): { path: string; url: URL } {
  if (request.method === 'CONNECT')
    throw new HttpProtocolError(400, 'bad_request', 'CONNECT is not supported: this is not a proxy.')
  checkHost(request.headers.get('host'))
  const url = parseUrl(request.url) // a few hosts the pattern allows (`%zz`) are still not a valid URL
  return { path: pathOf(request.url), url }
}

/** checkRequestTarget's refusal of a request, or null when the request is well-formed. */
export function targetRefusal(request: Request): HttpProtocolError | null {
  try {
    checkRequestTarget(request)
    return null
  } catch (error) {
    if (error instanceof HttpProtocolError) return error
    throw error
  }
}

/** The path for logs of requests that failed before (or in) checkRequestTarget. */
export const safePathOf = (request: Request): string => pathOf(request.url)

/** `new URL()`; anything it refuses is a 400. */
function parseUrl(url: string): URL {
  try {
    return new URL(url)
  } catch {
    throw new HttpProtocolError(400, 'bad_request', 'The request target is not a valid URL.')
  }
}
