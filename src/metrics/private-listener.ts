/**
 * METRICS_PORT: /metrics without a token on a port of its own, for scrapers that cannot
 * send one (Fly's managed Prometheus reads `[metrics]` from fly.toml and scrapes over the
 * private network). It binds METRICS_HOST, loopback unless set (on Fly, `fly-local-6pn`,
 * the machine's private address), so that even a machine whose ports are all reachable does
 * not hand its figures to anyone who asks.
 */
import type { AppMetrics } from './app-metrics.ts'

export function startPrivateMetricsListener(metrics: AppMetrics, port: number, hostname: string) {
  return Bun.serve({
    port,
    hostname,
    reusePort: false,
    fetch(request) {
      if (new URL(request.url).pathname !== '/metrics' || request.method !== 'GET')
        return new Response('Not found\n', { status: 404 })
      return new Response(metrics.render(), {
        headers: { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'cache-control': 'no-store' },
      })
    },
  })
}
