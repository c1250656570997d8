/**
 * Copies an existing SQLite database (the file `../sqlite/schema.ts` describes, at the latest
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
 *   inside the transaction (copy-verify.ts); timestamps are compared in the core's RFC 3339
 *   form (so a value that would not round-trip fails), mail text after the column's own
 *   unescaping, bytes by their SHA-256 (computed by the server on the PostgreSQL side). Any
 *   difference throws, naming the first row that differs, and rolls everything back.
 * - Mail text is escaped by the column's own mapping, as PostgreSQL mode's ingest escapes it
 *   (copy-columns.ts); a value PostgreSQL cannot take is refused naming its table and key, and
 *   a batch PostgreSQL refuses is retried row by row under savepoints to name the row.
 * - Progress: `onProgress` hears after every batch and every verified table.
 * - Identity columns (audit event ids) are copied as they are and their sequences set to the
 *   copied maximum, so the next event gets the next number.
 */
import { Database } from 'bun:sqlite'
import { createHash } from 'node:crypto'
import { is } from 'drizzle-orm'
import { getTableConfig, PgTable } from 'drizzle-orm/pg-core'
import postgres from 'postgres'
import type { Sql } from './client.ts'
import { describeKey, refusalOf, shapeOf, sizeOf, type TableShape, toPostgresValue } from './copy-columns.ts'
import { firstDifference, hashPostgresTable, quote, sqliteLine, sqliteRowCount, sqliteRows } from './copy-verify.ts'
import * as schema from './schema.ts'

export type { TableShape } from './copy-columns.ts'

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
  schema.linkChecks,
  schema.sessions,
  schema.memberships,
  schema.invites,
  schema.auditEvents,
]

/** Every table of the mirrored schema, in copy order; a table missing from ORDER is a bug here. */
export function copiedTables(): TableShape[] {
  const all = Object.values(schema as Record<string, unknown>).filter((t): t is PgTable => is(t, PgTable))
  const missing = all.filter((t) => !ORDER.includes(t)).map((t) => getTableConfig(t).name)
  if (missing.length > 0) throw new Error(`copy-from-sqlite does not know where to copy ${missing.join(', ')}`)
  return ORDER.map(shapeOf)
}

interface TableReport {
  table: string
  rows: number
  /** SHA-256 over the table's rows in primary-key order, the same on both sides. */
  sha256: string
}

export interface CopyReport {
  tables: TableReport[]
  /** Insert statements sent, all tables together (how finely the copy was batched). */
  batches: number
  /** Bytes of values sent (text as UTF-8, bytes as they are). */
  bytes: number
  /** From the start of the copy to its commit. */
  elapsedMs: number
}

/** Where a long copy stands; passed to `onProgress` after every batch and at each table's end. */
export interface CopyProgress {
  /** 'copying' after a batch is written; 'verified' once the table's read-back matched. */
  phase: 'copying' | 'verified'
  table: string
  tableRows: number
  tableTotal: number
  /** All tables together, so far and in the source. */
  rows: number
  totalRows: number
  bytes: number
  elapsedMs: number
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
  onProgress?: (progress: CopyProgress) => void
}

export class TargetNotEmpty extends Error {
  constructor(readonly tables: string[]) {
    super(
      `the PostgreSQL database is not empty (rows in ${tables.join(', ')}); copy only into a freshly migrated database`,
    )
  }
}

/** The SQLite file is not at the schema this copy knows: copying it would lose or misplace data. */
export class SourceSchemaMismatch extends Error {
  constructor(readonly differences: string[]) {
    super(
      `the SQLite database does not have the current schema (${differences.join('; ')}); ` +
        `start the current server on it once to migrate it, then copy`,
    )
  }
}

export class CopyMismatch extends Error {
  constructor(
    readonly table: string,
    detail: string,
    /** The first row found to differ or be refused, by its primary key; null when none could be named. */
    readonly key: string | null = null,
  ) {
    super(
      `the copy of ${table} differs from the SQLite database ` +
        `(${key === null ? '' : `row ${key}: `}${detail}); nothing was kept`,
    )
  }
}

/** A row PostgreSQL refuses (a value it cannot hold, a constraint it breaks), named by table and key. */
export class RowRefused extends CopyMismatch {
  constructor(
    table: string,
    key: string,
    readonly reason: string,
  ) {
    super(table, reason, key)
    this.message = `row ${key} of ${table} cannot be copied: ${reason}; nothing was kept`
  }
}

/**
 * Copies `sqlitePath` into the database behind `sql`. Resolves with the verified report;
 * throws SourceSchemaMismatch, TargetNotEmpty, CopyMismatch (RowRefused naming the row), or the
 * database's own error, having written nothing.
 */
export async function copyFromSqlite(sqlitePath: string, sql: Sql, options: CopyOptions = {}): Promise<CopyReport> {
  const tables = copiedTables()
  const source = new Database(sqlitePath, { readonly: true, strict: true })
  const started = performance.now()
  try {
    source.run('BEGIN') // one snapshot for every table, however long the copy takes
    checkSourceSchema(source, tables)
    const totals = new Map(tables.map((t) => [t.name, sqliteRowCount(source, t.name)]))
    const progress = { rows: 0, totalRows: [...totals.values()].reduce((a, b) => a + b, 0), bytes: 0 }
    const tell = (phase: CopyProgress['phase'], table: string, tableRows: number) =>
      options.onProgress?.({
        phase,
        table,
        tableRows,
        tableTotal: totals.get(table) ?? 0,
        ...progress,
        elapsedMs: performance.now() - started,
      })
    return await sql.begin(async (tx) => {
      // Two copies started at once into the same database: the second waits, then finds rows.
      await tx`select pg_advisory_xact_lock(hashtextextended('pigeonhole.copy-from-sqlite', 0))`
      const occupied: string[] = []
      for (const table of tables) {
        const rows = await tx.unsafe(`select 1 from ${quote(table.name)} limit 1`)
        if (rows.length > 0) occupied.push(table.name)
      }
      if (occupied.length > 0) throw new TargetNotEmpty(occupied)

      const report: CopyReport = { tables: [], batches: 0, bytes: 0, elapsedMs: 0 }
      for (const table of tables) {
        const copied = await copyTable(source, tx, table, options, (rows, bytes, tableRows) => {
          progress.rows += rows
          progress.bytes += bytes
          tell('copying', table.name, tableRows)
        })
        report.batches += copied.batches
        const readBack = await hashPostgresTable(tx, table)
        if (readBack.rows !== copied.rows || readBack.sha256 !== copied.sha256) {
          const first = await firstDifference(source, tx, table, copied.rows, readBack.rows)
          throw new CopyMismatch(table.name, first.detail, first.key)
        }
        for (const column of table.identity) {
          await tx.unsafe(
            `select setval(pg_get_serial_sequence($1, $2), max_id) from (select ` +
              `max(${quote(column)}) as max_id from ${quote(table.name)}) m where max_id is not null`,
            [table.name, column],
          )
        }
        report.tables.push({ table: table.name, rows: copied.rows, sha256: copied.sha256 })
        tell('verified', table.name, copied.rows)
      }
      report.bytes = progress.bytes
      report.elapsedMs = performance.now() - started
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
    const present = (source.query(`select name from pragma_table_info(?)`).all(table.name) as { name: string }[]).map(
      (c) => c.name,
    )
    if (present.length === 0) {
      differences.push(`no table ${table.name}`)
      continue
    }
    const expected = table.columns.map((c) => c.name)
    for (const name of expected) if (!present.includes(name)) differences.push(`${table.name} lacks ${name}`)
    for (const name of present)
      if (!expected.includes(name)) differences.push(`${table.name}.${name} has no place in PostgreSQL`)
  }
  if (differences.length > 0) throw new SourceSchemaMismatch(differences)
}

async function copyTable(
  source: Database,
  tx: postgres.TransactionSql,
  table: TableShape,
  options: CopyOptions,
  sent: (rows: number, bytes: number, tableRows: number) => void,
) {
  const batchRows = options.batchRows ?? 500
  const batchBytes = options.batchBytes ?? 2 * 1024 * 1024
  const names = table.columns.map((c) => quote(c.name)).join(', ')
  const overriding = table.identity.length > 0 ? ' overriding system value' : ''
  const width = table.columns.length
  const insert = (rows: unknown[][]) => {
    const tuples = rows.map((_, r) => `(${table.columns.map((_, c) => `$${r * width + c + 1}`).join(', ')})`).join(', ')
    return tx.unsafe(
      `insert into ${quote(table.name)} (${names})${overriding} values ${tuples}`,
      rows.flat() as never[],
    )
  }
  const hash = createHash('sha256')
  const state = { rows: 0, batches: 0 }
  let pending: unknown[][] = []
  let keys: string[] = []
  let pendingBytes = 0

  const flush = async () => {
    if (pending.length === 0) return
    // Each batch under a savepoint: when PostgreSQL refuses it, the rows are tried one by one
    // to name the row it refused (the refusal itself names no row, or only a constraint's key).
    try {
      await tx.savepoint(() => insert(pending))
    } catch (error) {
      throw rowRelated(error) ? await nameRefusedRow(tx, table, pending, keys, insert, error) : error
    }
    state.batches++
    state.rows += pending.length
    sent(pending.length, pendingBytes, state.rows)
    pending = []
    keys = []
    pendingBytes = 0
  }

  for (const row of sqliteRows(source, table)) {
    for (const column of table.columns) {
      const refused = refusalOf(column, row[column.name])
      if (refused) throw new RowRefused(table.name, describeKey(table, row), refused)
    }
    hash.update(sqliteLine(table, row))
    const bytes = table.columns.reduce((sum, c) => sum + sizeOf(row[c.name]), 0)
    if (pending.length > 0 && (pending.length >= batchRows || pendingBytes + bytes > batchBytes)) await flush()
    pending.push(table.columns.map((c) => toPostgresValue(c, row[c.name])))
    keys.push(describeKey(table, row))
    pendingBytes += bytes
  }
  await flush()
  return { rows: state.rows, batches: state.batches, sha256: hash.digest('hex') }
}

/**
 * A refusal caused by the rows themselves: a data exception (class 22: a value the type cannot
 * hold) or a broken constraint (class 23). A lost connection or a cancelled statement is not
 * about any row and is passed on as it is.
 */
const rowRelated = (error: unknown) => error instanceof postgres.PostgresError && /^2[23]/.test(error.code)

async function nameRefusedRow(
  tx: postgres.TransactionSql,
  table: TableShape,
  rows: unknown[][],
  keys: string[],
  insert: (rows: unknown[][]) => Promise<unknown>,
  error: unknown,
): Promise<unknown> {
  const reason = (e: postgres.PostgresError) => `PostgreSQL refused it: ${e.message}${e.detail ? ` (${e.detail})` : ''}`
  for (const [i, row] of rows.entries()) {
    try {
      await tx.savepoint(() => insert([row]))
    } catch (single) {
      return rowRelated(single)
        ? new RowRefused(table.name, keys[i]!, reason(single as postgres.PostgresError))
        : single
    }
  }
  // The rows pass one by one but not together (two rows of the batch clash): name the batch.
  return new RowRefused(table.name, `${keys[0]} … ${keys.at(-1)}`, reason(error as postgres.PostgresError))
}
