/**
 * The HTTP load tool, used unchanged against Pigeonhole, maildev and the bare Bun.serve:
 * a fixed number of concurrent keep-alive workers, each sending its next GET as soon as
 * the previous response body is read, for a fixed time. Installed by `bun install`
 * because it is part of the repository.
 */
import { percentile } from './stats.ts'

export interface LoadResult {
  requests: number
  errors: number
  seconds: number
  perSecond: number
  p50Ms: number
  p99Ms: number
  bodyBytes: number
}

export interface LoadOptions {
  concurrency: number
  durationMs: number
  headers?: Record<string, string>
}

export async function httpLoad(url: string, options: LoadOptions): Promise<LoadResult> {
  // identity: no target spends CPU compressing on loopback, and body sizes stay comparable.
  const headers = { 'accept-encoding': 'identity', ...options.headers }
  const latencies: number[] = []
  let errors = 0
  let bodyBytes = 0
  const started = performance.now()
  const deadline = started + options.durationMs
  const worker = async () => {
    while (performance.now() < deadline) {
      const sent = performance.now()
      try {
        const response = await fetch(url, { headers })
        const body = await response.arrayBuffer()
        if (response.status !== 200) errors++
        else bodyBytes = body.byteLength
      } catch {
        errors++
      }
      latencies.push(performance.now() - sent)
    }
  }
  await Promise.all(Array.from({ length: options.concurrency }, worker))
  const seconds = (performance.now() - started) / 1000
  return {
    requests: latencies.length,
    errors,
    seconds,
    perSecond: latencies.length / seconds,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    bodyBytes,
  }
}
