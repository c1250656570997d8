/**
 * Drizzle builds a query's SQL from its builder objects on every run; for the statements
 * that run on every request, that building was the largest single cost of an API read
 * (bench/README.md). A prepared query is built
 * once, with `sql.placeholder()` for the values, and reused. Several apps may share one
 * process (tests), so each database gets its own.
 */
import type { Db } from './types.ts'

export function preparedPerDatabase<T>(build: (db: Db) => T): (db: Db) => T {
  const built = new WeakMap<Db, T>()
  return (db) => {
    let query = built.get(db)
    if (query === undefined) {
      query = build(db)
      built.set(db, query)
    }
    return query
  }
}
