/** The progress lines of `db copy`: copying lines at most every few seconds, every verified table, the summary. */
import { expect, test } from 'bun:test'
import { progressPrinter, summaryLine } from '../../src/storage/postgres/copy-progress.ts'

const at = (elapsedMs: number, rows: number, phase: 'copying' | 'verified' = 'copying') => ({
  phase,
  table: 'messages',
  tableRows: rows,
  tableTotal: 10_000,
  rows,
  totalRows: 20_000,
  bytes: rows * 10_000,
  elapsedMs,
})

test('copying lines come at most once per interval; verified lines always', () => {
  const lines: string[] = []
  const print = progressPrinter((line) => lines.push(line), 5_000)
  print(at(1_000, 500)) // too soon after the start
  print(at(5_000, 2_500))
  print(at(9_000, 4_500)) // too soon after the last line
  print(at(10_000, 5_000))
  print(at(11_000, 10_000, 'verified'))
  expect(lines).toEqual([
    'copying messages: 2,500 of 10,000 rows; 2,500 of 20,000 rows (12%), 25.0 MB in 5.0 s, 500 rows/s, 5.0 MB/s',
    'copying messages: 5,000 of 10,000 rows; 5,000 of 20,000 rows (25%), 50.0 MB in 10.0 s, 500 rows/s, 5.0 MB/s',
    'verified messages: 10,000 rows; 10,000 of 20,000 rows (50%), 100.0 MB in 11.0 s, 909 rows/s, 9.1 MB/s',
  ])
})

test('the summary gives the totals and the rates', () => {
  const report = {
    tables: [
      { table: 'a', rows: 1_500, sha256: '' },
      { table: 'b', rows: 500, sha256: '' },
    ],
    batches: 7,
    bytes: 4_000_000,
    elapsedMs: 2_000,
  }
  expect(summaryLine(report)).toBe(
    'done: 2,000 of 2,000 rows (100%), 4.0 MB in 2.0 s, 1,000 rows/s, 2.0 MB/s, 7 insert statements',
  )
})
