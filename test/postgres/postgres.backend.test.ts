/**
 * openBackend (src/app/backend.ts), the one place both composition roots open the database:
 * in PostgreSQL mode every lease a process writes (idempotency claims, long-poll slots) carries
 * its one holder name, so its close gives back all of them; the CLI's use opens the store alone.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { openBackend } from '../../src/app/backend.ts'
import { systemClock } from '../../src/clock.ts'
import { loadConfig } from '../../src/config.ts'
import { CLI_ACTOR } from '../../src/core/audit/audit.ts'
import { createOrganization } from '../../src/core/organizations/organizations.ts'
import { StorageHealth } from '../../src/core/runtime/storage-health.ts'
import { createLogger } from '../../src/log.ts'
import { openPostgres, type Sql } from '../../src/storage/postgres/client.ts'
import { describeWithPostgres, migratedDatabase } from '../support/postgres.ts'
import { scratchDir } from '../support/scratch.ts'

setDefaultTimeout(30_000)

describeWithPostgres('openBackend in PostgreSQL mode', () => {
  let url: string
  let sql: Sql
  let dir: string
  beforeAll(async () => {
    url = await migratedDatabase()
    sql = openPostgres(url, { max: 1 })
    dir = scratchDir('pigeonhole-backend-')
  })
  afterAll(async () => {
    await sql?.end()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  // DATABASE_PATH names no file in PostgreSQL mode; nothing is created there.
  const configFor = () =>
    loadConfig({ DATABASE_URL: url, DATABASE_PATH: join(dir, 'pigeonhole.db'), RECEIVING_DOMAIN: 'inbox.test' })

  test('one holder name on every lease: an idempotency claim and a long-poll slot, both gone at close', async () => {
    const config = configFor()
    const logger = createLogger('error', () => {})
    const backend = await openBackend(config, {
      use: 'server',
      clock: systemClock,
      logger,
      health: new StorageHealth(logger, () => {}, 'postgres'),
    })
    let closed = false
    try {
      expect(backend.dialect).toBe('postgres')
      expect(backend.sqlite).toBeNull()
      expect(backend.lock).toBeNull()
      const org = await createOrganization({ clock: systemClock, store: backend.store }, CLI_ACTOR, {
        name: 'backend-holder',
        preset: 'local',
      })
      const now = new Date()
      const claimed = await backend.store.inboxes.claimIdempotencyKey({
        organizationId: org.id,
        key: 'one-holder',
        fingerprint: 'f',
        now: now.toISOString(),
        expiresAt: new Date(now.getTime() + 86_400_000).toISOString(),
      })
      expect(claimed.outcome).toBe('claimed')
      const release = await backend.coordination.longPolls.acquire({
        organizationId: org.id,
        keyPublicId: 'k1',
        limits: config.limits,
      })
      const holders = await sql<
        { holder: string }[]
      >`select holder from idempotency_leases union all select holder from slot_leases`
      expect(holders.length).toBeGreaterThanOrEqual(2)
      expect(new Set(holders.map((row) => row.holder))).toEqual(new Set([backend.leaseHolder!]))
      release()
      await backend.close()
      closed = true
      const [leases] = await sql<
        { left: number }[]
      >`select (select count(*) from idempotency_leases)::int + (select count(*) from slot_leases)::int as left`
      expect(leases?.left).toBe(0)
    } finally {
      if (!closed) await backend.close()
    }
  })

  test('the CLI opens the store alone: no coordination, no lock', async () => {
    const backend = await openBackend(configFor(), { use: 'admin' })
    try {
      expect(backend.dialect).toBe('postgres')
      expect(backend.coordination).toBeNull()
      expect(backend.lock).toBeNull()
      expect(await backend.store.organizations.organizationLimits('org_absent')).toBeNull()
    } finally {
      await backend.close()
    }
  })
})
