/**
 * Counters, gauges and histograms in Prometheus' text exposition format (version 0.0.4).
 * Written here rather than taken from prom-client: on Bun that library adds more resident
 * memory to the bundled server than this whole format is worth (figure in bench/README.md).
 */
type Labels = Record<string, string>

interface Metric {
  render(): string[]
}

const escapeLabel = (value: string) => value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')
const escapeHelp = (value: string) => value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')

const formatValue = (value: number) =>
  Number.isNaN(value) ? 'NaN' : value === Infinity ? '+Inf' : value === -Infinity ? '-Inf' : String(value)

function labelText(labels: Labels): string {
  const pairs = Object.entries(labels).map(([name, value]) => `${name}="${escapeLabel(value)}"`)
  return pairs.length === 0 ? '' : `{${pairs.join(',')}}`
}

/** One series per distinct label set, keyed by its rendered label text. */
class Series<T> {
  readonly byKey = new Map<string, { labels: Labels; value: T }>()
  constructor(private readonly initial: () => T) {}
  at(labels: Labels): { labels: Labels; value: T } {
    const key = labelText(labels)
    const known = this.byKey.get(key)
    if (known) return known
    const entry = { labels, value: this.initial() }
    this.byKey.set(key, entry)
    return entry
  }
}

export class Counter<L extends string = never> implements Metric {
  private readonly series = new Series(() => 0)
  constructor(
    readonly name: string,
    private readonly help: string,
  ) {}
  inc(labels: Record<L, string> = {} as Record<L, string>, by = 1): void {
    this.series.at(labels).value += by
  }
  /** The current value of one series (tests and the dashboard's own checks). */
  get(labels: Record<L, string> = {} as Record<L, string>): number {
    return this.series.at(labels).value
  }
  render(): string[] {
    const lines = [`# HELP ${this.name} ${escapeHelp(this.help)}`, `# TYPE ${this.name} counter`]
    for (const { labels, value } of this.series.byKey.values())
      lines.push(`${this.name}${labelText(labels)} ${formatValue(value)}`)
    return lines
  }
}

/** A value read when scraped: sizes, open sessions, memory. */
export class Gauge implements Metric {
  constructor(
    readonly name: string,
    private readonly help: string,
    private readonly read: () => Array<[Labels, number]> | number,
  ) {}
  render(): string[] {
    const read = this.read()
    const values: Array<[Labels, number]> = typeof read === 'number' ? [[{}, read]] : read
    return [
      `# HELP ${this.name} ${escapeHelp(this.help)}`,
      `# TYPE ${this.name} gauge`,
      ...values.map(([labels, value]) => `${this.name}${labelText(labels)} ${formatValue(value)}`),
    ]
  }
}

export class Histogram implements Metric {
  private readonly counts: number[]
  private sum = 0
  private count = 0
  constructor(
    readonly name: string,
    private readonly help: string,
    /** Upper bounds in ascending order; +Inf is added. */
    private readonly buckets: readonly number[],
  ) {
    this.counts = buckets.map(() => 0)
  }
  observe(value: number): void {
    this.sum += value
    this.count++
    for (let i = 0; i < this.buckets.length; i++) if (value <= this.buckets[i]!) this.counts[i]!++
  }
  render(): string[] {
    const lines = [`# HELP ${this.name} ${escapeHelp(this.help)}`, `# TYPE ${this.name} histogram`]
    for (const [i, bound] of this.buckets.entries())
      lines.push(`${this.name}_bucket{le="${formatValue(bound)}"} ${this.counts[i]}`)
    lines.push(
      `${this.name}_bucket{le="+Inf"} ${this.count}`,
      `${this.name}_sum ${formatValue(this.sum)}`,
      `${this.name}_count ${this.count}`,
    )
    return lines
  }
}

export class MetricRegistry {
  private readonly metrics: Metric[] = []
  add<M extends Metric>(metric: M): M {
    this.metrics.push(metric)
    return metric
  }
  /** The whole scrape; a gauge whose reading fails is left out rather than failing the scrape. */
  render(): string {
    const lines: string[] = []
    for (const metric of this.metrics) {
      try {
        lines.push(...metric.render())
      } catch {
        // e.g. a file gone between two stats; the next scrape has it again
      }
    }
    return lines.join('\n') + '\n'
  }
}
