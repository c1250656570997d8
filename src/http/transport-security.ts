/**
 * Strict-Transport-Security on every response of the HTTP port (API and console, errors
 * and refusals included) when BASE_URL is https: a browser that once reached the console
 * over https never again sends its session cookie, or a sign-in form, over plain http to
 * that host (Fly's `force_https` redirect still answers the first plain request, which is
 * the one HSTS cannot cover). Browsers ignore the header on plain http, so it costs nothing
 * behind a proxy that speaks plain http to us.
 *
 * No includeSubDomains: BASE_URL's host may be one name among an operator's others, and
 * their subdomains are not ours to bind to https. No preload: that is a promise about the
 * whole domain, for its owner to make (docs/operations.md, "Trusted networks").
 */
import type { Config } from '../config.ts'

/** The header's value, or null when BASE_URL is http. */
export function strictTransportSecurity(config: Pick<Config, 'baseUrl' | 'hstsMaxAgeSeconds'>): string | null {
  return String(config.baseUrl).startsWith('https:') ? `max-age=${config.hstsMaxAgeSeconds}` : null
}

/** Adds the header to a response, or to the one a promise resolves to. */
export function withStrictTransportSecurity(
  answer: Response | Promise<Response>,
  value: string,
): Response | Promise<Response> {
  return answer instanceof Response ? stamped(answer, value) : answer.then((response) => stamped(response, value))
}

function stamped(response: Response, value: string): Response {
  try {
    response.headers.set('strict-transport-security', value)
    return response
  } catch {
    // A response with immutable headers (Response.redirect, for one) is copied, its body streamed on.
    const copy = new Response(response.body, response)
    copy.headers.set('strict-transport-security', value)
    return copy
  }
}
