/**
 * Event-loop delay: a timer asks to run every 100 ms and records how late it ran. (Bun's
 * perf_hooks.monitorEventLoopDelay reports nonsense minimums, so it is measured here.)
 */
import type { Histogram } from './exposition.ts'

const INTERVAL_MS = 100

export function sampleEventLoopDelay(histogram: Histogram): () => void {
  let expected = performance.now() + INTERVAL_MS
  const timer = setInterval(() => {
    const now = performance.now()
    histogram.observe(Math.max(0, now - expected) / 1000)
    expected = now + INTERVAL_MS
  }, INTERVAL_MS)
  timer.unref?.()
  return () => clearInterval(timer)
}
