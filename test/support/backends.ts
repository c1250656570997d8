/**
 * The contract suite's two backends (test/contract/): each test body runs once against the
 * SQLite adapter and once against the PostgreSQL adapter of the storage port, through core's
 * verbs, so both dialects are held to one behaviour.
 *
 * Each backend is the server's own assembly (src/app/assemble.ts, nothing listening) on a
 * fresh SQLite file; for PostgreSQL its `store` is swapped for the PostgreSQL adapter on a
 * fresh migrated database of the run's throwaway cluster. Without PostgreSQL installed the
 * PostgreSQL half is skipped with one line saying why (describeWithPostgres).
 */
import { afterAll, beforeAll, describe } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { assemble, type Assembly } from '../../src/app/assemble.ts'
import type { Clock } from '../../src/clock.ts'
import { loadConfig } from '../../src/config.ts'
import type { Services } from '../../src/core/common/services.ts'
import { createLogger } from '../../src/log.ts'
import { openPostgres, type Sql } from '../../src/storage/postgres/client.ts'
import { newLeaseHolder } from '../../src/storage/postgres/lease-holder.ts'
import { createPostgresStore } from '../../src/storage/postgres/store.ts'
import type { Storage } from '../../src/storage/database.ts'
import type { Dialect } from '../../src/storage/port.ts'
import { describeWithPostgres, migratedDatabase } from './postgres.ts'
import { scratchDir } from './scratch.ts'
import { layDownSelfSigned } from './tls-seed.ts'

export interface BackendOptions {
  env?: Record<string, string>
  clock?: Clock
}

export interface Backend {
  readonly dialect: Dialect
  /** The assembled services, with `store` on this backend; valid inside the tests. */
  services(): Services
  /** The SQLite file of the assembly (the sqlite half's store; fixtures core has no verb for). */
  storage(): Storage
  /** Every log line written so far, parsed. */
  readonly logs: Record<string, any>[]
  /** The PostgreSQL pool of the postgres half (for fixtures core has no verb for yet); undefined for SQLite. */
  postgres(): Sql | undefined
}

/**
 * `describe(label)` twice, `[sqlite]` and `[postgres]`; `body` gets the backend. Each half
 * assembles its services once (beforeAll) and closes them after its tests.
 */
export function describeEachBackend(
  label: string,
  body: (backend: Backend) => void,
  options: BackendOptions = {},
): void {
  describe(`${label} [sqlite]`, () => body(backendFor('sqlite', options)))
  describeWithPostgres(`${label} [postgres]`, () => body(backendFor('postgres', options)))
}

function backendFor(dialect: Dialect, options: BackendOptions): Backend {
  let assembly: Assembly | undefined
  let services: Services | undefined
  let sql: Sql | undefined
  let dir: string | undefined
  const logs: Record<string, any>[] = []
  beforeAll(async () => {
    dir = scratchDir('pigeonhole-contract-')
    const config = loadConfig({
      PORT: '0',
      SMTP_PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_PATH: join(dir, 'pigeonhole.db'),
      RECEIVING_DOMAIN: 'inbox.test',
      CONSOLE_PASSWORD_MEMORY_KIB: '8',
      ...options.env,
    })
    const logger = createLogger('debug', (line) => logs.push(JSON.parse(line)))
    await layDownSelfSigned(config.databasePath, config.receivingDomain)
    assembly = await assemble({ config, clock: options.clock, logger })
    services = assembly.services
    if (dialect === 'postgres') {
      sql = openPostgres(await migratedDatabase(), { max: 4 })
      services = { ...assembly.services, store: createPostgresStore(sql, { holder: newLeaseHolder() }) }
    }
  })
  afterAll(async () => {
    await sql?.end()
    assembly?.close()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })
  return {
    dialect,
    logs,
    postgres: () => sql,
    storage() {
      if (!assembly?.backend.sqlite)
        throw new Error('the backend is assembled in beforeAll; call storage() inside a test')
      return assembly.backend.sqlite
    },
    services() {
      if (!services) throw new Error('the backend is assembled in beforeAll; call services() inside a test')
      return services
    },
  }
}
