/**
 * GET /metrics: Prometheus text exposition, only when METRICS_TOKEN is set (otherwise the
 * route does not exist and answers the ordinary 404). A missing or wrong Bearer token gets
 * 401, so a scraper misconfiguration is told apart from a server without metrics. Never
 * in the OpenAPI document.
 */
import { timingSafeEqual } from 'node:crypto'
import { Elysia } from 'elysia'
import type { Services } from '../../core/common/services.ts'
import type { AppMetrics } from '../../metrics/app-metrics.ts'

const tokenMatches = (header: string | null, token: string) => {
  const given = Buffer.from(header?.startsWith('Bearer ') ? header.slice('Bearer '.length) : '')
  const expected = Buffer.from(token)
  return given.length === expected.length && timingSafeEqual(given, expected)
}

export const metricsRoutes = (s: Services, metrics: AppMetrics) => {
  const token = s.config.metricsToken
  if (!token) return new Elysia()
  return new Elysia().get(
    '/metrics',
    ({ request, set }) => {
      set.headers['cache-control'] = 'no-store'
      if (!tokenMatches(request.headers.get('authorization'), token)) {
        set.status = 401
        set.headers['www-authenticate'] = 'Bearer realm="metrics"'
        set.headers['content-type'] = 'text/plain; charset=utf-8'
        return 'A valid METRICS_TOKEN Bearer token is required.\n'
      }
      set.headers['content-type'] = 'text/plain; version=0.0.4; charset=utf-8'
      return metrics.render()
    },
    { detail: { hide: true } },
  )
}
