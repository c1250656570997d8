/**
 * The PostgreSQL schema mirrors the SQLite one: both migration folders are applied to real
 * databases (SQLite in memory, PostgreSQL on the test cluster) and what they built is read
 * back from each catalogue and compared: tables, columns with their types and nullability,
 * primary keys, indexes, foreign keys. A SQLite migration that is not mirrored in
 * src/storage/postgres/schema.ts (and drizzle/postgres/) fails here.
 */
import { Database } from 'bun:sqlite'
import { expect, setDefaultTimeout, test } from 'bun:test'
import { join } from 'node:path'
import { drizzle } from 'drizzle-orm/bun-sqlite'
import { migrate } from 'drizzle-orm/bun-sqlite/migrator'
import { openPostgres } from '../../src/storage/postgres/client.ts'
import { describeWithPostgres, migratedDatabase } from '../support/postgres.ts'

setDefaultTimeout(60_000)

/** Tables only PostgreSQL mode has: what one process keeps in memory, shared across machines. */
const POSTGRES_ONLY = ['idempotency_leases', 'quota_reservations', 'request_counts', 'sign_in_failures', 'slot_leases']

/** SQLite's storage class → the PostgreSQL type each column is expected to have. */
function expectedType(column: string, sqliteType: string): string {
  if (sqliteType === 'blob') return 'bytea'
  if (sqliteType === 'text') return column.endsWith('_at') ? 'timestamp with time zone' : 'text'
  if (sqliteType === 'integer') {
    if (column === 'is_operator') return 'boolean'
    if (column === 'size_bytes' || column === 'audit_events.id') return 'bigint'
    return 'integer'
  }
  return `unmapped SQLite type ${sqliteType}`
}

interface Shape {
  columns: string[] // "table.column type null|not null"
  primaryKeys: string[] // "table(a,b)"
  indexes: string[] // "table name(a,b) unique?"
  foreignKeys: string[] // "table.column -> table.column on delete x"
}

function sqliteShape(): Shape {
  const sqlite = new Database(':memory:')
  sqlite.run('PRAGMA foreign_keys = ON')
  migrate(drizzle(sqlite), { migrationsFolder: join(import.meta.dir, '..', '..', 'drizzle') })
  const shape: Shape = { columns: [], primaryKeys: [], indexes: [], foreignKeys: [] }
  const tables = sqlite
    .query<{ name: string }, []>(
      "select name from sqlite_master where type = 'table' and name not like 'sqlite_%' and name not like '__drizzle%'",
    )
    .all()
  for (const { name: table } of tables) {
    const columns = sqlite
      .query<{ name: string; type: string; notnull: number; pk: number }, []>(`pragma table_info(${table})`)
      .all()
    const keyed = columns.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk)
    shape.primaryKeys.push(`${table}(${keyed.map((c) => c.name).join(',')})`)
    for (const c of columns) {
      const type = expectedType(
        table === 'audit_events' && c.name === 'id' ? 'audit_events.id' : c.name,
        c.type.toLowerCase(),
      )
      shape.columns.push(`${table}.${c.name} ${type} ${c.notnull || c.pk ? 'not null' : 'null'}`)
    }
    for (const index of sqlite
      .query<{ name: string; unique: number; origin: string }, []>(`pragma index_list(${table})`)
      .all()) {
      if (index.origin === 'pk') continue
      const on = sqlite.query<{ name: string; seqno: number }, []>(`pragma index_info(${index.name})`).all()
      shape.indexes.push(`${table} ${index.name}(${on.map((c) => c.name).join(',')})${index.unique ? ' unique' : ''}`)
    }
    for (const fk of sqlite
      .query<{ table: string; from: string; to: string; on_delete: string }, []>(`pragma foreign_key_list(${table})`)
      .all()) {
      shape.foreignKeys.push(`${table}.${fk.from} -> ${fk.table}.${fk.to} on delete ${fk.on_delete.toLowerCase()}`)
    }
  }
  sqlite.close()
  for (const list of Object.values(shape)) list.sort()
  return shape
}

async function postgresShape(url: string): Promise<Shape & { tables: string[] }> {
  const sql = openPostgres(url, { max: 1 })
  try {
    const tables = (
      await sql<
        { name: string }[]
      >`select table_name as name from information_schema.tables where table_schema = 'public'`
    ).map((t) => t.name)
    const mirrored = tables.filter((t) => !POSTGRES_ONLY.includes(t))
    const columns = await sql<{ table: string; column: string; type: string; nullable: string }[]>`
      select table_name as table, column_name as column, data_type as type, is_nullable as nullable
      from information_schema.columns where table_schema = 'public' and table_name in ${sql(mirrored)}`
    const indexes = await sql<{ table: string; name: string; unique: boolean; primary: boolean; columns: string[] }[]>`
      select t.relname as table, i.relname as name, ix.indisunique as unique, ix.indisprimary as primary,
        array(select a.attname::text from unnest(ix.indkey) with ordinality k(attnum, ord)
              join pg_attribute a on a.attrelid = t.oid and a.attnum = k.attnum order by k.ord) as columns
      from pg_index ix join pg_class i on i.oid = ix.indexrelid join pg_class t on t.oid = ix.indrelid
      where t.relnamespace = 'public'::regnamespace and t.relname in ${sql(mirrored)}`
    const foreignKeys = await sql<
      { table: string; column: string; refTable: string; refColumn: string; onDelete: string }[]
    >`
      select c.conrelid::regclass::text as table, a.attname::text as column, c.confrelid::regclass::text as "refTable",
        af.attname::text as "refColumn", c.confdeltype as "onDelete"
      from pg_constraint c
      join pg_attribute a on a.attrelid = c.conrelid and a.attnum = c.conkey[1]
      join pg_attribute af on af.attrelid = c.confrelid and af.attnum = c.confkey[1]
      where c.contype = 'f' and c.connamespace = 'public'::regnamespace`
    const onDelete: Record<string, string> = {
      c: 'cascade',
      a: 'no action',
      r: 'restrict',
      n: 'set null',
      d: 'set default',
    }
    const shape = {
      tables,
      columns: columns.map((c) => `${c.table}.${c.column} ${c.type} ${c.nullable === 'YES' ? 'null' : 'not null'}`),
      primaryKeys: indexes.filter((i) => i.primary).map((i) => `${i.table}(${i.columns.join(',')})`),
      indexes: indexes
        .filter((i) => !i.primary)
        .map((i) => `${i.table} ${i.name}(${i.columns.join(',')})${i.unique ? ' unique' : ''}`),
      foreignKeys: foreignKeys.map(
        (f) => `${f.table}.${f.column} -> ${f.refTable}.${f.refColumn} on delete ${onDelete[f.onDelete]}`,
      ),
    }
    for (const list of [shape.columns, shape.primaryKeys, shape.indexes, shape.foreignKeys]) list.sort()
    return shape
  } finally {
    await sql.end()
  }
}

describeWithPostgres('schema parity', () => {
  test('PostgreSQL has every SQLite table, column, primary key, index and foreign key under the same names', async () => {
    const sqlite = sqliteShape()
    const { tables, ...postgres } = await postgresShape(await migratedDatabase())
    expect(sqlite.columns.length).toBeGreaterThan(100)
    expect(postgres.columns).toEqual(sqlite.columns)
    expect(postgres.primaryKeys).toEqual(sqlite.primaryKeys)
    expect(postgres.indexes).toEqual(sqlite.indexes)
    expect(postgres.foreignKeys).toEqual(sqlite.foreignKeys)
    // Besides the mirrored tables, only the coordination tables exist.
    const sqliteTables = [...new Set(sqlite.primaryKeys.map((k) => k.slice(0, k.indexOf('('))))]
    expect(tables.sort()).toEqual([...sqliteTables, ...POSTGRES_ONLY].sort())
  })
})
