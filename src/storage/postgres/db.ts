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

/**
 * The client Drizzle is given: the same pool, but every statement Drizzle sends is a named
 * prepared statement, as postgres.js's own tagged templates are. Drizzle sends through
 * `unsafe()`, which postgres.js does not prepare by default; and postgres.js sends a statement
 * with parameters that is not prepared on its connection as Parse + Describe first, waits for
 * the server's answer, and only then binds and runs it: two round trips per statement, and
 * statements meant to go out together (store/inbound.ts) wait for each other. Prepared, a
 * statement costs that once per connection and statement text, then one round trip, and
 * consecutive ones are pipelined. Transactions and savepoints hand Drizzle a client that
 * prepares too. The server keeps each connection's statements until it closes (postgres.js
 * replaces a connection after 30 to 60 minutes); their number is bounded by the query shapes
 * in src/storage/postgres/, as for the tagged templates.
 */
function preparing<T extends postgres.Sql | postgres.TransactionSql>(client: T): T {
  return new Proxy(client, {
    get(target, key) {
      if (key === 'unsafe')
        return (query: string, parameters?: postgres.ParameterOrJSON<never>[], options?: postgres.UnsafeQueryOptions) =>
          target.unsafe(query, parameters, { ...options, prepare: true })
      if (key === 'begin' || key === 'savepoint')
        return (...args: unknown[]) => {
          const work = args.pop() as (tx: postgres.TransactionSql) => unknown
          return (Reflect.get(target, key) as (...a: unknown[]) => unknown)(...args, (tx: postgres.TransactionSql) =>
            work(preparing(tx)),
          )
        }
      return Reflect.get(target, key)
    },
  })
}

export const postgresDb = (sql: Sql): PostgresDb => drizzle(preparing(sql), { schema: everyTable })
