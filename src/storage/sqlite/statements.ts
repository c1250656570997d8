import type { Database as SQLite } from 'bun:sqlite'

/**
 * Drizzle calls `prepare()` for every query it runs, so SQLite compiled the same SQL again
 * on each request and each SMTP step (a measurable share of a list read's CPU, see
 * bench/README.md), leaving the old statements to the GC. Drizzle binds values as
 * parameters, so the SQL text depends only on the query's shape: a small, bounded set.
 * Reusing one compiled statement per text is safe because bun:sqlite runs a statement to
 * completion synchronously and Drizzle binds fresh parameters on every call.
 */
export function reuseStatements(sqlite: SQLite): { finalizeAll(): void } {
  const compile = sqlite.prepare.bind(sqlite)
  const compiled = new Map<string, ReturnType<SQLite['prepare']>>()
  const MAX = 500 // far above the number of distinct query shapes; a guard, not a cache policy
  sqlite.prepare = ((sql: string, ...rest: unknown[]) => {
    if (rest.length > 0) return (compile as (...args: unknown[]) => ReturnType<SQLite['prepare']>)(sql, ...rest)
    let statement = compiled.get(sql)
    if (!statement) {
      statement = compile(sql)
      if (compiled.size < MAX) compiled.set(sql, statement)
    }
    return statement
  }) as SQLite['prepare']
  return {
    // Without this the closed connection keeps its file handles until the GC collects the
    // statements (SQLite's close waits for them), which keeps a volume from being unmounted.
    finalizeAll: () => {
      for (const statement of compiled.values()) statement.finalize()
      compiled.clear()
    },
  }
}
