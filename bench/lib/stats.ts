/** Small numeric helpers: nearest-rank percentiles and medians over raw samples. */

export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN
  const sorted = [...samples].sort((a, b) => a - b)
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  return sorted[rank]!
}

export const median = (values: readonly number[]) => percentile(values, 50)

/** a / b, or NaN when either side is missing, so a broken measurement never looks like a ratio. */
export const ratio = (a: number, b: number) =>
  Number.isFinite(a) && Number.isFinite(b) && b !== 0 ? a / b : Number.NaN

export const round = (value: number, digits = 2) =>
  Number.isFinite(value) ? Number(value.toFixed(digits)) : Number.NaN

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
