/**
 * Drizzle over a postgres.js pool, with the mirrored schema: what the PostgreSQL adapter's
 * operations query with. `db.transaction(async (tx) => …)` runs on one connection of the pool.
 */
import { drizzle, type PostgresJsDatabase } from 'drizzle-orm/postgres-js'
import type postgres from 'postgres'
import type { Sql } from './client.ts'
import * as coordination from './coordination-schema.ts'
import * as schema from './schema.ts'

const everyTable = { ...schema, ...coordination }
export type PostgresDb = PostgresJsDatabase<typeof everyTable>
export type PostgresTx = Parameters<Parameters<PostgresDb['transaction']>[0]>[0]
export type PostgresDbOrTx = PostgresDb | PostgresTx

export const postgresDb = (sql: Sql): PostgresDb => drizzle(sql, { schema: everyTable })

/**
 * The postgres.js transaction a Drizzle transaction runs on, for the raw-SQL helpers
 * (quota-reservations.ts) that must take part in it. Drizzle keeps it as its session's client.
 */
export const rawTransaction = (tx: PostgresTx): postgres.TransactionSql => (tx as unknown as { session: { client: postgres.TransactionSql } }).session.client
