/**
 * Opening a PostgreSQL client (postgres.js). Why this client and not `pg` or `Bun.sql`:
 * see docs/internals/architecture.md's dependency list; test/postgres/postgres.client.test.ts holds
 * the behaviours we rely on (LISTEN/NOTIFY with a hook on every reconnection, pools that
 * recover by themselves after the server restarts, the pool's size honoured).
 */
import postgres from 'postgres'

export type Sql = postgres.Sql
/** A pool or an open transaction: what a statement that may join a caller's transaction takes. */
export type Queryable = postgres.Sql | postgres.TransactionSql

export interface ClientOptions {
  /** Connections in the pool; one machine's share of the server's `max_connections`. */
  max?: number
  /** Where the server's notices (warnings) go; dropped by default, they are not errors of ours. */
  onNotice?: (message: string) => void
  /**
   * The server's `statement_timeout` for this pool's connections, and with it the silence
   * deadline: a connection whose statement hears nothing for this long plus SILENCE_MARGIN_MS
   * is destroyed and its statements fail with CONNECTION_SILENT (an outage to
   * core/runtime/storage-health.ts). Unset: neither (the migration waits for another machine's under
   * its lock; `cli db copy` runs long statements).
   */
  statementTimeoutMs?: number
}

/**
 * Beyond the statement timeout, how long a silent connection is given before it is taken for
 * lost: the server's cancel needs a moment to run and its error a round trip, even on a busy
 * machine. A reachable server answers within the statement timeout, with rows or that error.
 */
export const SILENCE_MARGIN_MS = 2_000

/** A pooled client for `url` (postgres:// or postgresql://). Connections open lazily, on first use. */
export function openPostgres(url: string, options: ClientOptions = {}): Sql {
  return postgres(url, {
    max: options.max ?? 10,
    onnotice: (notice) => options.onNotice?.(String(notice.message)),
    // A machine whose pool sits idle gives its connections back; a managed database counts them.
    idle_timeout: 60,
    // Fail fast when the server is unreachable rather than the default 30 s: callers answer 451/503.
    connect_timeout: 5,
    // Between failed connection attempts postgres.js waits 3^n/100 s, up to 20 s by default, and
    // a query arriving meanwhile waits for the next attempt: after a dozen refusals every request
    // took 10 to 20 s to be refused. Doubling from 50 ms up to 1 s keeps a refusal prompt (451,
    // 503) and is still no storm: a machine has a handful of connections.
    backoff: (retries: number) => Math.min(0.05 * 2 ** retries, 1) * (0.5 + Math.random() / 2),
    // A database that goes silent (a network path dropping every packet, a frozen server) would
    // otherwise hold a sent statement, and the request behind it, until the OS gives the
    // connection up: minutes. The silence deadline is our patch to postgres.js.
    ...(options.statementTimeoutMs === undefined
      ? {}
      : { silence_timeout: (options.statementTimeoutMs + SILENCE_MARGIN_MS) / 1000 }),
    connection: {
      // Timestamps read back as text carry the session's offset; UTC keeps them the core's (time.ts).
      TimeZone: 'UTC',
      ...(options.statementTimeoutMs === undefined ? {} : { statement_timeout: options.statementTimeoutMs }),
    },
  })
}

/** The URL as it may be printed or logged: user, host, port and database, never the password. */
export function describePostgresUrl(url: string): string {
  try {
    const parsed = new URL(url)
    const user = parsed.username ? `${decodeURIComponent(parsed.username)}@` : ''
    return `${parsed.protocol}//${user}${parsed.host}${parsed.pathname}`
  } catch {
    return '(an unreadable URL)'
  }
}
