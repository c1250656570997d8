/**
 * The verification half of `db copy`: both sides read in primary-key order and hashed in one
 * canonical form (copy-columns.ts), and, when the hashes differ, the first row that differs
 * named by its key.
 */
import type { Database } from 'bun:sqlite'
import { createHash } from 'node:crypto'
import type { Queryable } from './client.ts'
import { canonicalFromSqlite, describeKey, rowLine, type TableShape } from './copy-columns.ts'
import { rfc3339FromPostgres } from './time.ts'

export const quote = (name: string) => `"${name.replaceAll('"', '""')}"`

/**
 * The rows of a table that belong to the data. A large message's blobs are written before the
 * message itself (src/storage/sqlite/blob-stager.ts); a crash between the two leaves blob rows
 * that no message or attachment owns. No read reaches them and the server removes them at its
 * next start; a copy made before that leaves them behind rather than failing on them.
 */
const OWNED_ONLY: Record<string, string> = {
  message_sources: ' where message_id in (select id from messages)',
  attachment_contents: ' where attachment_id in (select id from attachments)',
}

/** How many rows of the table the copy takes from SQLite. */
export function sqliteRowCount(source: Database, table: string): number {
  return (source.query(`select count(*) as n from ${quote(table)}${OWNED_ONLY[table] ?? ''}`).get() as { n: number }).n
}

/** The table's rows from SQLite in primary-key order (SQLite sorts text by its bytes). */
export function sqliteRows(source: Database, table: TableShape): IterableIterator<Record<string, unknown>> {
  const names = table.columns.map((c) => quote(c.name)).join(', ')
  const order = table.primaryKey.map(quote).join(', ')
  const owned = OWNED_ONLY[table.name] ?? ''
  return source
    .query<Record<string, unknown>, []>(`select ${names} from ${quote(table.name)}${owned} order by ${order}`)
    .iterate()
}

export const sqliteLine = (table: TableShape, row: Record<string, unknown>) =>
  rowLine(table.columns.map((c) => canonicalFromSqlite(c.kind, row[c.name])))

/** The SELECT that reads a table back in primary-key order, each value as text, bytes as their SHA-256. */
function readBackQuery(table: TableShape): string {
  // Columns are qualified with the table's alias: a bare name in ORDER BY would sort by the
  // output column of that name, the `::text` form (1, 10, 11, …, 2), not by the value.
  const select = table.columns
    .map((c) => (c.kind === 'bytes' ? `encode(sha256(t.${quote(c.name)}), 'hex')` : `t.${quote(c.name)}::text`))
    .join(', ')
  const order = table.primaryKey
    .map((c) =>
      table.columns.find((col) => col.name === c)?.kind === 'text' ? `t.${quote(c)} collate "C"` : `t.${quote(c)}`,
    )
    .join(', ')
  return `select ${select} from ${quote(table.name)} t order by ${order}`
}

const postgresLine = (table: TableShape, row: (string | null)[]) =>
  rowLine(
    table.columns.map((c, i) => {
      const value = row[i] ?? null
      if (value === null) return null
      return c.kind === 'timestamp' ? rfc3339FromPostgres(value) : c.fromDriver(value)
    }),
  )

async function* postgresRows(tx: Queryable, table: TableShape): AsyncGenerator<(string | null)[]> {
  for await (const page of tx.unsafe(readBackQuery(table)).values().cursor(500)) {
    for (const row of page as unknown as (string | null)[][]) yield row
  }
}

/** Reads the table back in primary-key order (byte order of text, as SQLite sorts), in pages. */
export async function hashPostgresTable(tx: Queryable, table: TableShape) {
  const hash = createHash('sha256')
  let rows = 0
  for await (const row of postgresRows(tx, table)) {
    hash.update(postgresLine(table, row))
    rows++
  }
  return { rows, sha256: hash.digest('hex') }
}

/**
 * The hashes differ: both sides are read again, row by row in the same order, to name the
 * first row that differs and how (this runs only on the way to refusing the copy).
 */
export async function firstDifference(
  source: Database,
  tx: Queryable,
  table: TableShape,
  sqliteCount: number,
  postgresCount: number,
): Promise<{ key: string | null; detail: string }> {
  const counts = sqliteCount === postgresCount ? '' : `; ${sqliteCount} rows in SQLite, ${postgresCount} in PostgreSQL`
  const theirs = postgresRows(tx, table)
  for (const row of sqliteRows(source, table)) {
    const ours = sqliteLine(table, row)
    const next = await theirs.next()
    const copied = next.done ? null : postgresLine(table, next.value)
    if (copied === ours) continue
    await theirs.return(undefined)
    const detail = copied === null ? 'missing from PostgreSQL' : differingColumns(table, ours, copied)
    return { key: describeKey(table, row), detail: `${detail}${counts}` }
  }
  await theirs.return(undefined)
  return { key: null, detail: `content hashes differ${counts}` }
}

/** Hashes of secrets: named when they differ, never printed. */
const UNPRINTED = /(password_hash|_sha256)$/

/** Each column that differs, with both values (cut short: a message body may be a megabyte). */
function differingColumns(table: TableShape, ours: string, copied: string): string {
  const a = JSON.parse(ours) as (string | null)[]
  const b = JSON.parse(copied) as (string | null)[]
  const shown = (value: string | null) => {
    const text = JSON.stringify(value)
    return text.length > 120 ? `${text.slice(0, 120)}…` : text
  }
  return table.columns
    .flatMap((column, i) => {
      if (a[i] === b[i]) return []
      return [
        UNPRINTED.test(column.name)
          ? `${column.name} differs`
          : `${column.name} ${shown(a[i] ?? null)} reads back as ${shown(b[i] ?? null)}`,
      ]
    })
    .join(', ')
}
