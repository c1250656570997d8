/**
 * Headers on every console response, and the Origin check for state changes. The CSP
 * allows scripts, styles and fetches from this origin only (no inline script), no framing
 * of the console, and frames only from this origin (the viewer's sandboxed message HTML).
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "frame-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ')

const SANDBOXED = /(^|;)\s*sandbox(\s|;|$)/i

/**
 * Sets the console's headers on a response. Only a response whose own CSP includes
 * `sandbox` (message HTML for the viewer's frame) keeps its CSP, and it may be framed by
 * this origin; every other response gets the console's CSP and `X-Frame-Options: DENY`,
 * whatever its handler set.
 */
export function securityHeaders(headers: Headers): void {
  const own = headers.get('content-security-policy')
  const sandboxed = own !== null && SANDBOXED.test(own)
  if (sandboxed) {
    if (!headers.has('x-frame-options')) headers.set('x-frame-options', 'SAMEORIGIN')
  } else {
    headers.set('content-security-policy', CONSOLE_CSP)
    headers.set('x-frame-options', 'DENY')
  }
  headers.set('x-content-type-options', 'nosniff')
  // same-origin, not no-referrer: a no-referrer policy makes browsers send `Origin: null` on form posts.
  // A sandboxed response (no forms) may be stricter: message HTML sends no referrer at all.
  if (!(sandboxed && headers.get('referrer-policy') === 'no-referrer')) headers.set('referrer-policy', 'same-origin')
  headers.set('cross-origin-opener-policy', 'same-origin')
  if (!headers.has('cache-control')) headers.set('cache-control', 'no-store')
}

/**
 * A state-changing request must come from a page of ours: its Origin (or, from an older
 * browser, its Referer) names BASE_URL's origin or the Host the request was sent to. A
 * request with neither is refused: every browser that can run the console sends Origin.
 */
export function sameOrigin(request: Request, baseUrl: string): boolean {
  const claimed = request.headers.get('origin') ?? refererOrigin(request.headers.get('referer'))
  if (!claimed || claimed === 'null') return false
  if (claimed === new URL(baseUrl).origin) return true
  const host = request.headers.get('host')
  try {
    return host !== null && new URL(claimed).host === host
  } catch {
    return false
  }
}

function refererOrigin(referer: string | null): string | null {
  if (!referer) return null
  try {
    return new URL(referer).origin
  } catch {
    return null
  }
}
