/**
 * The lines `db copy` prints on stderr while it runs: a line every few seconds while a table
 * is being copied (rows and bytes so far, of how many rows, and the rate), one line as each
 * table is verified, and a closing line with the totals. An operator moving a year of mail
 * sees that it moves and roughly when it will end. Beside the copy, so its figures have one
 * type (CopyProgress), which the CLI's entry wires to stderr.
 */

import type { CopyProgress, CopyReport } from './copy-from-sqlite.ts'

const count = (n: number) => n.toLocaleString('en-US')
const megabytes = (bytes: number) => `${(bytes / 1_000_000).toFixed(1)} MB`
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`
const perSecond = (n: number, ms: number) => (ms > 0 ? (n * 1000) / ms : 0)

/** The figures shared by every line: totals so far, and the rate since the start. */
function totals(p: Pick<CopyProgress, 'rows' | 'totalRows' | 'bytes' | 'elapsedMs'>): string {
  const share = p.totalRows > 0 ? ` (${Math.floor((p.rows * 100) / p.totalRows)}%)` : ''
  return (
    `${count(p.rows)} of ${count(p.totalRows)} rows${share}, ${megabytes(p.bytes)} in ${seconds(p.elapsedMs)}, ` +
    `${count(Math.round(perSecond(p.rows, p.elapsedMs)))} rows/s, ${megabytes(perSecond(p.bytes, p.elapsedMs))}/s`
  )
}

/** An `onProgress` for copyFromSqlite that writes at most one copying line per `everyMs`. */
export function progressPrinter(write: (line: string) => void, everyMs = 5_000): (progress: CopyProgress) => void {
  let lastLine = 0
  return (p) => {
    if (p.phase === 'verified') {
      write(`verified ${p.table}: ${count(p.tableRows)} rows; ${totals(p)}`)
      return
    }
    if (p.elapsedMs - lastLine < everyMs) return
    lastLine = p.elapsedMs
    write(`copying ${p.table}: ${count(p.tableRows)} of ${count(p.tableTotal)} rows; ${totals(p)}`)
  }
}

export function summaryLine(report: Pick<CopyReport, 'tables' | 'batches' | 'bytes' | 'elapsedMs'>): string {
  const rows = report.tables.reduce((sum, t) => sum + t.rows, 0)
  return (
    `done: ${totals({ rows, totalRows: rows, bytes: report.bytes, elapsedMs: report.elapsedMs })}, ` +
    `${report.batches} insert statements`
  )
}
