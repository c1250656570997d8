/**
 * Copies an existing SQLite database (the file `../schema.ts` describes, at the latest
 * migration) into an empty, migrated PostgreSQL database (`./schema.ts`), then verifies the
 * copy. This is the building block of moving a deployment to PostgreSQL mode; the CLI command
 * that runs it comes with the storage port.
 *
 * - All or nothing: every insert and the verification run in one PostgreSQL transaction, so
 *   a failure anywhere (a constraint, a lost connection, a mismatch) leaves the target empty.
 * - A consistent source: the SQLite file is opened read-only and read inside one read
 *   transaction, so a server still writing to it (WAL mode) cannot tear the copy. Stop the
 *   server first anyway: mail it accepts after the snapshot is not copied.
 * - Bounded memory: each table is read with a streaming statement in primary-key order and
 *   written in batches of at most `batchRows` rows or `batchBytes` bytes (whichever comes
 *   first; a single larger row goes alone), so a database of large messages is never held whole.
 * - Refuses a target that holds any row, before writing anything.
 * - Verification: per table, the row count and a SHA-256 over the rows in primary-key order
 *   are computed from the SQLite rows as they are read and from the PostgreSQL rows read back
 *   inside the transaction; timestamps are compared in the core's RFC 3339 form (so a value
 *   that would not round-trip fails), bytes by their SHA-256 (computed by the server on the
 *   PostgreSQL side). Any difference throws and rolls everything back.
 * - Identity columns (audit event ids) are copied as they are and their sequences set to the
 *   copied maximum, so the next event gets the next number.
 */
import { Database } from 'bun:sqlite'
import { createHash } from 'node:crypto'
import { is } from 'drizzle-orm'
import { getTableConfig, PgTable } from 'drizzle-orm/pg-core'
import type { Queryable, Sql } from './client.ts'
import * as schema from './schema.ts'
import { rfc3339FromPostgres } from './time.ts'

/** Parents before children, so every foreign key finds its row (users before api_keys' created_by). */
const ORDER: PgTable[] = [
  schema.organizations,
  schema.users,
  schema.apiKeys,
  schema.inboxes,
  schema.idempotencyRecords,
  schema.monthlyEmailUsage,
  schema.inboundBursts,
  schema.settings,
  schema.messages,
  schema.messageContents,
  schema.messageSearchTexts,
  schema.messageSources,
  schema.attachments,
  schema.attachmentContents,
  schema.sessions,
  schema.memberships,
  schema.invites,
  schema.auditEvents,
]

type Kind = 'text' | 'integer' | 'boolean' | 'timestamp' | 'bytes'

interface TableShape {
  name: string
  columns: { name: string; kind: Kind }[]
  primaryKey: string[]
  identity: string[]
}

function kindOf(sqlType: string): Kind {
  if (sqlType.startsWith('timestamp')) return 'timestamp'
  if (sqlType === 'boolean') return 'boolean'
  if (sqlType === 'bytea') return 'bytes'
  if (sqlType === 'integer' || sqlType === 'bigint') return 'integer'
  if (sqlType === 'text') return 'text'
  throw new Error(`no copy rule for column type ${sqlType}`)
}

function shapeOf(table: PgTable): TableShape {
  const config = getTableConfig(table)
  const composite = config.primaryKeys[0]?.columns.map((c) => c.name)
  return {
    name: config.name,
    columns: config.columns.map((c) => ({ name: c.name, kind: kindOf(c.getSQLType()) })),
    primaryKey: composite ?? config.columns.filter((c) => c.primary).map((c) => c.name),
    identity: config.columns.filter((c) => (c as { generatedIdentity?: unknown }).generatedIdentity).map((c) => c.name),
  }
}

/** Every table of the mirrored schema, in copy order; a table missing from ORDER is a bug here. */
export function copiedTables(): TableShape[] {
  const all = Object.values(schema as Record<string, unknown>).filter((t): t is PgTable => is(t, PgTable))
  const missing = all.filter((t) => !ORDER.includes(t)).map((t) => getTableConfig(t).name)
  if (missing.length > 0) throw new Error(`copy-from-sqlite does not know where to copy ${missing.join(', ')}`)
  return ORDER.map(shapeOf)
}

export interface TableReport {
  table: string
  rows: number
  /** SHA-256 over the table's rows in primary-key order, the same on both sides. */
  sha256: string
}

export interface CopyReport {
  tables: TableReport[]
  /** Insert statements sent, all tables together (how finely the copy was batched). */
  batches: number
}

export interface CopyOptions {
  /** Most rows per insert statement (default 500). */
  batchRows?: number
  /**
   * Most bytes of values per insert statement (default 2 MiB); one larger row goes alone.
   * Measured copying 1 MiB messages: 2 MiB batches peaked at 143 MiB of process memory for
   * both 100 and 400 MiB of mail (and ran faster than 8 MiB batches, which peaked at 244-423).
   */
  batchBytes?: number
}

export class TargetNotEmpty extends Error {
  constructor(readonly tables: string[]) {
    super(`the PostgreSQL database is not empty (rows in ${tables.join(', ')}); copy only into a freshly migrated database`)
  }
}

/** The SQLite file is not at the schema this copy knows: copying it would lose or misplace data. */
export class SourceSchemaMismatch extends Error {
  constructor(readonly differences: string[]) {
    super(`the SQLite database does not have the current schema (${differences.join('; ')}); start the current server on it once to migrate it, then copy`)
  }
}

export class CopyMismatch extends Error {
  constructor(
    readonly table: string,
    detail: string,
  ) {
    super(`the copy of ${table} differs from the SQLite database (${detail}); nothing was kept`)
  }
}

const quote = (name: string) => `"${name.replaceAll('"', '""')}"`

/** One row's canonical form for hashing: every value as text (or null), bytes as their SHA-256. */
const rowLine = (values: (string | null)[]) => `${JSON.stringify(values)}\n`

function canonicalFromSqlite(kind: Kind, value: unknown): string | null {
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

function canonicalFromPostgres(kind: Kind, value: string | null): string | null {
  if (value === null) return null
  if (kind === 'timestamp') return rfc3339FromPostgres(value)
  return value
}

function toPostgresValue(kind: Kind, value: unknown): unknown {
  if (value === null || value === undefined) return null
  if (kind === 'bytes') {
    const view = value as Uint8Array
    return Buffer.from(view.buffer, view.byteOffset, view.byteLength) // the same memory, not a copy
  }
  if (kind === 'boolean') return Boolean(value)
  return value
}

const sizeOf = (value: unknown) => (value instanceof Uint8Array ? value.byteLength : typeof value === 'string' ? value.length * 2 : 8)

/**
 * Copies `sqlitePath` into the database behind `sql`. Resolves with the verified report;
 * throws SourceSchemaMismatch, TargetNotEmpty, CopyMismatch, or the database's own error, having
 * written nothing.
 */
export async function copyFromSqlite(sqlitePath: string, sql: Sql, options: CopyOptions = {}): Promise<CopyReport> {
  const batchRows = options.batchRows ?? 500
  const batchBytes = options.batchBytes ?? 2 * 1024 * 1024
  const tables = copiedTables()
  const source = new Database(sqlitePath, { readonly: true, strict: true })
  try {
    source.run('BEGIN') // one snapshot for every table, however long the copy takes
    checkSourceSchema(source, tables)
    return await sql.begin(async (tx) => {
      // Two copies started at once into the same database: the second waits, then finds rows.
      await tx`select pg_advisory_xact_lock(hashtextextended('pigeonhole.copy-from-sqlite', 0))`
      const occupied: string[] = []
      for (const table of tables) {
        const rows = await tx.unsafe(`select 1 from ${quote(table.name)} limit 1`)
        if (rows.length > 0) occupied.push(table.name)
      }
      if (occupied.length > 0) throw new TargetNotEmpty(occupied)

      const report: CopyReport = { tables: [], batches: 0 }
      for (const table of tables) {
        const copied = await copyTable(source, tx, table, batchRows, batchBytes)
        report.batches += copied.batches
        const readBack = await hashPostgresTable(tx, table)
        if (readBack.rows !== copied.rows) throw new CopyMismatch(table.name, `${copied.rows} rows in SQLite, ${readBack.rows} in PostgreSQL`)
        if (readBack.sha256 !== copied.sha256) throw new CopyMismatch(table.name, 'content hashes differ')
        for (const column of table.identity) {
          await tx.unsafe(`select setval(pg_get_serial_sequence($1, $2), max_id) from (select max(${quote(column)}) as max_id from ${quote(table.name)}) m where max_id is not null`, [
            table.name,
            column,
          ])
        }
        report.tables.push({ table: table.name, rows: copied.rows, sha256: copied.sha256 })
      }
      return report
    })
  } finally {
    if (source.inTransaction) source.run('COMMIT')
    source.close()
  }
}

/**
 * Every table and column the copy writes must exist in the SQLite file, and the file must
 * have no column the copy would leave behind: an older or newer file is refused before
 * anything is written, rather than failing halfway or dropping a column's values.
 */
function checkSourceSchema(source: Database, tables: TableShape[]): void {
  const differences: string[] = []
  for (const table of tables) {
    const present = (source.query(`select name from pragma_table_info(?)`).all(table.name) as { name: string }[]).map((c) => c.name)
    if (present.length === 0) {
      differences.push(`no table ${table.name}`)
      continue
    }
    const expected = table.columns.map((c) => c.name)
    for (const name of expected) if (!present.includes(name)) differences.push(`${table.name} lacks ${name}`)
    for (const name of present) if (!expected.includes(name)) differences.push(`${table.name}.${name} has no place in PostgreSQL`)
  }
  if (differences.length > 0) throw new SourceSchemaMismatch(differences)
}

async function copyTable(source: Database, tx: Queryable, table: TableShape, batchRows: number, batchBytes: number) {
  const names = table.columns.map((c) => quote(c.name)).join(', ')
  const order = table.primaryKey.map(quote).join(', ')
  const overriding = table.identity.length > 0 ? ' overriding system value' : ''
  const hash = createHash('sha256')
  let rows = 0
  let batches = 0
  let pending: unknown[][] = []
  let pendingBytes = 0

  const flush = async () => {
    if (pending.length === 0) return
    const width = table.columns.length
    const tuples = pending.map((_, r) => `(${table.columns.map((_, c) => `$${r * width + c + 1}`).join(', ')})`).join(', ')
    await tx.unsafe(`insert into ${quote(table.name)} (${names})${overriding} values ${tuples}`, pending.flat() as never[])
    batches++
    pending = []
    pendingBytes = 0
  }

  const statement = source.query<Record<string, unknown>, []>(`select ${names} from ${quote(table.name)} order by ${order}`)
  for (const row of statement.iterate()) {
    const values = table.columns.map((c) => row[c.name])
    hash.update(rowLine(table.columns.map((c, i) => canonicalFromSqlite(c.kind, values[i]))))
    const bytes = values.reduce<number>((sum, v) => sum + sizeOf(v), 0)
    if (pending.length > 0 && (pending.length >= batchRows || pendingBytes + bytes > batchBytes)) await flush()
    pending.push(table.columns.map((c, i) => toPostgresValue(c.kind, values[i])))
    pendingBytes += bytes
    rows++
  }
  await flush()
  return { rows, batches, sha256: hash.digest('hex') }
}

/** Reads the table back in primary-key order (byte order of text, as SQLite sorts), in pages. */
async function hashPostgresTable(tx: Queryable, table: TableShape) {
  const select = table.columns.map((c) => (c.kind === 'bytes' ? `encode(sha256(${quote(c.name)}), 'hex')` : `${quote(c.name)}::text`)).join(', ')
  const order = table.primaryKey.map((c) => (table.columns.find((col) => col.name === c)?.kind === 'text' ? `${quote(c)} collate "C"` : quote(c))).join(', ')
  const hash = createHash('sha256')
  let rows = 0
  const cursor = tx
    .unsafe(`select ${select} from ${quote(table.name)} order by ${order}`)
    .values()
    .cursor(500)
  for await (const page of cursor) {
    for (const row of page as unknown as (string | null)[][]) {
      hash.update(rowLine(table.columns.map((c, i) => canonicalFromPostgres(c.kind, row[i] ?? null))))
      rows++
    }
  }
  return { rows, sha256: hash.digest('hex') }
}
