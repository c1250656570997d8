/**
 * Helpers shared by the routing tests: the real server pointed at the fake Cloudflare API,
 * and a second SQLite connection to look into the file the way an operator would.
 */
import { Database } from 'bun:sqlite'
import { startTestServer, type TestServer } from './harness.ts'
import { FAKE_TOKEN, FAKE_ZONE, startFakeCloudflare, type FakeCloudflare } from './fakes/cloudflare-api.ts'

export interface InboxRow {
  id: string
  address: string
  state: string
  routing_rule_id: string | null
}

/** Environment that makes the server use the real Cloudflare adapter against `fake`. */
export function cloudflareEnv(baseUrl: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    EMAIL_ROUTING: 'cloudflare',
    CLOUDFLARE_API_TOKEN: FAKE_TOKEN,
    CLOUDFLARE_ZONE_ID: FAKE_ZONE,
    CLOUDFLARE_API_BASE: baseUrl,
    ...extra,
  }
}

/**
 * A fake Cloudflare API and the real server using it. `timeoutMs` is short by default
 * so the hang tests finish quickly; tests that hold an answer on purpose raise it.
 */
export async function startWithFakeCloudflare(options: { timeoutMs?: number; env?: Record<string, string> } = {}) {
  const fake = await startFakeCloudflare()
  const server = await startTestServer({
    env: cloudflareEnv(fake.baseUrl, { CLOUDFLARE_TIMEOUT_MS: String(options.timeoutMs ?? 300), ...options.env }),
  })
  return {
    fake,
    server,
    async stop() {
      await server.stop()
      await fake.stop()
    },
  }
}

/** Reads the SQLite file through its own connection, as `sqlite3` would. */
export function openDatabaseFile(server: TestServer): Database {
  const db = new Database(server.databasePath)
  db.exec('PRAGMA foreign_keys = ON')
  db.exec('PRAGMA busy_timeout = 5000')
  return db
}

export function inboxRows(server: TestServer): InboxRow[] {
  const db = openDatabaseFile(server)
  try {
    return db
      .query<InboxRow, []>('SELECT id, address, state, routing_rule_id FROM inboxes ORDER BY created_at, id')
      .all()
  } finally {
    db.close()
  }
}

export function idempotencyRecordCount(server: TestServer): number {
  const db = openDatabaseFile(server)
  try {
    return db.query<{ n: number }, []>('SELECT count(*) AS n FROM idempotency_records').get()!.n
  } finally {
    db.close()
  }
}

/** A port nothing listens on: bound by the OS, then released. */
export function closedPort(): number {
  const probe = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
  const port = probe.port!
  probe.stop(true)
  return port
}

export type { FakeCloudflare }
