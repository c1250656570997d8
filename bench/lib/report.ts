/**
 * Turns the run's medians into goal checks (the project's performance goals) and a plain-text table.
 * Goals are reported, never asserted: only a missing figure fails the run.
 */

export interface Goal {
  name: string
  value: number
  goal: string
  met: boolean
}

export function goal(name: string, value: number, op: '>=' | '<=', limit: number, unit = ''): Goal {
  const met = Number.isFinite(value) && (op === '>=' ? value >= limit : value <= limit)
  return { name, value, goal: `${op} ${limit}${unit}`, met }
}

export type Row = [string, ...string[]]

export function fmt(value: number | undefined, digits = 0): string {
  if (value === undefined || !Number.isFinite(value)) return 'n/a'
  if (Math.abs(value) >= 1000) return Math.round(value).toLocaleString('en-US')
  return value.toFixed(digits)
}

/** Left-aligned first column, right-aligned others. */
export function table(header: Row, rows: Row[]): string {
  const all = [header, ...rows]
  const widths = header.map((_, i) => Math.max(...all.map((row) => (row[i] ?? '').length)))
  const line = (row: Row) =>
    row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : (cell ?? '').padStart(widths[i]!))).join('  ')
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n')
}

/** Markdown version of the same table, for the README. */
export function markdown(header: Row, rows: Row[]): string {
  const line = (row: Row) => `| ${row.join(' | ')} |`
  return [line(header), `|${header.map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`, ...rows.map(line)].join('\n')
}

/** Every number in the results must be a real figure; returns the paths of those that are not. */
export function missingFigures(value: unknown, path = ''): string[] {
  if (typeof value === 'number') return Number.isFinite(value) ? [] : [path]
  if (Array.isArray(value)) return value.flatMap((item, i) => missingFigures(item, `${path}[${i}]`))
  if (value && typeof value === 'object')
    return Object.entries(value).flatMap(([key, item]) => missingFigures(item, path ? `${path}.${key}` : key))
  return []
}
