/** PostgreSQL migrations: N machines starting at once migrate exactly once. */
import { expect, setDefaultTimeout, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { openPostgres } from '../../src/storage/postgres/client.ts'
import { migratePostgres, postgresMigrationsFolder } from '../../src/storage/postgres/migrate.ts'
import { describeWithPostgres, freshDatabase } from '../support/postgres.ts'

setDefaultTimeout(60_000)

const journal = JSON.parse(readFileSync(join(postgresMigrationsFolder(), 'meta', '_journal.json'), 'utf8')) as {
  entries: unknown[]
}

describeWithPostgres('migratePostgres', () => {
  test('six machines starting together: one applies every migration, all finish with the schema in place', async () => {
    const url = await freshDatabase()
    const results = await Promise.all(Array.from({ length: 6 }, () => migratePostgres(url)))
    const applied = results.map((r) => r.applied).sort()
    expect(applied).toEqual([0, 0, 0, 0, 0, journal.entries.length])

    const sql = openPostgres(url, { max: 1 })
    try {
      const [migrations] = await sql<{ n: number }[]>`select count(*)::int as n from drizzle.__drizzle_migrations`
      expect(migrations!.n).toBe(journal.entries.length)
      const tables = await sql<
        { name: string }[]
      >`select table_name as name from information_schema.tables where table_schema = 'public'`
      expect(tables.map((t) => t.name)).toContain('messages')
      expect(tables.map((t) => t.name)).toContain('slot_leases')
    } finally {
      await sql.end()
    }
  })

  test('a later start finds everything applied and changes nothing', async () => {
    const url = await freshDatabase()
    expect((await migratePostgres(url)).applied).toBe(journal.entries.length)
    expect((await migratePostgres(url)).applied).toBe(0)
  })
})
