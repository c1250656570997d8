/**
 * METRICS_PORT: /metrics without a token on a port of its own, for scrapers that cannot
 * send one (Fly's managed Prometheus reads `[metrics]` from fly.toml and scrapes over the
 * private network). Only published ports are reachable from outside; this one never is.
 */
import type { AppMetrics } from './app-metrics.ts'

export function startPrivateMetricsListener(metrics: AppMetrics, port: number, hostname: string) {
  return Bun.serve({
    port,
    hostname,
    reusePort: false,
    fetch(request) {
      if (new URL(request.url).pathname !== '/metrics' || request.method !== 'GET') return new Response('Not found\n', { status: 404 })
      return new Response(metrics.render(), { headers: { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'cache-control': 'no-store' } })
    },
  })
}
