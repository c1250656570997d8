/**
 * How `db copy` treats each column of the mirrored schema: what a SQLite value becomes on its
 * way into PostgreSQL, the canonical text both sides are hashed in, and the values PostgreSQL
 * would refuse, caught before they are sent so that the refusal names the table and the row.
 *
 * Mail text (schema.ts's `mailText` columns) goes through the column's own driver mapping,
 * the very function PostgreSQL mode's ingest calls: NUL and U+FFFF are escaped exactly as
 * mail received in PostgreSQL mode is, and read back through the same mapping. Any other
 * text is copied as it is; a NUL there (which no form of ours lets in) is refused by name.
 */
import { createHash } from 'node:crypto'
import { is } from 'drizzle-orm'
import { getTableConfig, PgCustomColumn, type PgColumn, type PgTable } from 'drizzle-orm/pg-core'

export type Kind = 'text' | 'mailText' | 'int32' | 'int64' | 'boolean' | 'timestamp' | 'bytes'

export interface ColumnShape {
  name: string
  kind: Kind
  /** The column's driver mapping (mail text's escape and unescape); identity elsewhere. */
  toDriver(value: string): string
  fromDriver(value: string): string
}

export interface TableShape {
  name: string
  columns: ColumnShape[]
  primaryKey: string[]
  identity: string[]
}

function kindOf(column: PgColumn): Kind {
  const sqlType = column.getSQLType()
  if (sqlType.startsWith('timestamp')) return 'timestamp'
  if (sqlType === 'boolean') return 'boolean'
  if (sqlType === 'bytea') return 'bytes'
  if (sqlType === 'integer') return 'int32'
  if (sqlType === 'bigint') return 'int64'
  if (sqlType === 'text') {
    if (!is(column, PgCustomColumn)) return 'text'
    // The one custom text type is mail text; a new one must say how it is copied.
    if (column.mapToDriverValue('\0') !== '\0') return 'mailText'
  }
  throw new Error(`no copy rule for column ${column.name} of type ${sqlType}`)
}

const same = (value: string) => value

export function shapeOf(table: PgTable): TableShape {
  const config = getTableConfig(table)
  const composite = config.primaryKeys[0]?.columns.map((c) => c.name)
  return {
    name: config.name,
    columns: config.columns.map((c) => {
      const kind = kindOf(c)
      return kind === 'mailText'
        ? {
            name: c.name,
            kind,
            toDriver: (v: string) => c.mapToDriverValue(v) as string,
            fromDriver: (v: string) => c.mapFromDriverValue(v) as string,
          }
        : { name: c.name, kind, toDriver: same, fromDriver: same }
    }),
    primaryKey: composite ?? config.columns.filter((c) => c.primary).map((c) => c.name),
    identity: config.columns.filter((c) => (c as { generatedIdentity?: unknown }).generatedIdentity).map((c) => c.name),
  }
}

/** A row's primary key as an operator finds it again: `id=org_…` or `organization_id=…, month=…`. */
export function describeKey(table: TableShape, row: Record<string, unknown>): string {
  return table.primaryKey.map((name) => `${name}=${String(row[name])}`).join(', ')
}

/** One row's canonical form for hashing: every value as text (or null), bytes as their SHA-256. */
export const rowLine = (values: (string | null)[]) => `${JSON.stringify(values)}\n`

export function canonicalFromSqlite(kind: Kind, value: unknown): string | null {
  if (value === null || value === undefined) return null
  switch (kind) {
    case 'bytes':
      return createHash('sha256')
        .update(value as Uint8Array)
        .digest('hex')
    case 'boolean':
      return value ? 'true' : 'false'
    default:
      return String(value)
  }
}

const INT32 = 2 ** 31

/**
 * Why PostgreSQL would refuse (or change) this SQLite value, or null when it takes it. SQLite
 * keeps whatever a writer gave it (a text in an integer column, a NUL in text); these are
 * named here rather than failing a whole batch with a message that names no row.
 */
export function refusalOf(column: ColumnShape, value: unknown): string | null {
  if (value === null || value === undefined) return null
  const shown = () => JSON.stringify(typeof value === 'string' && value.length > 60 ? `${value.slice(0, 60)}…` : value)
  switch (column.kind) {
    case 'text':
      if (typeof value !== 'string')
        return `${column.name} holds a ${value instanceof Uint8Array ? 'blob' : typeof value} where text belongs`
      if (value.includes('\0'))
        return `${column.name} holds a NUL character, which PostgreSQL text cannot hold (${shown()})`
      return null
    case 'mailText':
      return typeof value === 'string'
        ? null
        : `${column.name} holds a ${value instanceof Uint8Array ? 'blob' : typeof value} where text belongs`
    case 'int32':
    case 'int64': {
      const limit = column.kind === 'int32' ? INT32 : 2 ** 53
      if (typeof value !== 'number' && typeof value !== 'bigint')
        return `${column.name} holds ${shown()}, not an integer`
      const n = Number(value)
      return Number.isInteger(n) && n >= -limit && n < limit
        ? null
        : `${column.name} holds ${shown()}, out of range for its PostgreSQL type`
    }
    case 'boolean':
      return value === 0 || value === 1 ? null : `${column.name} holds ${shown()}, not 0 or 1`
    case 'timestamp':
      // The client turns the text into a Date before sending it: text no Date reads fails there.
      return typeof value === 'string' && !Number.isNaN(Date.parse(value))
        ? null
        : `${column.name} holds ${shown()}, not a time`
    case 'bytes':
      return value instanceof Uint8Array ? null : `${column.name} holds ${shown()} where bytes belong`
  }
}

export function toPostgresValue(column: ColumnShape, value: unknown): unknown {
  if (value === null || value === undefined) return null
  switch (column.kind) {
    case 'bytes': {
      const view = value as Uint8Array
      return Buffer.from(view.buffer, view.byteOffset, view.byteLength) // the same memory, not a copy
    }
    case 'boolean':
      return Boolean(value)
    case 'mailText':
      return column.toDriver(value as string)
    default:
      return value
  }
}

/** Bytes a value takes on the wire (text as UTF-8): the batch budget and the progress figures. */
export const sizeOf = (value: unknown) =>
  value instanceof Uint8Array ? value.byteLength : typeof value === 'string' ? Buffer.byteLength(value) : 8
