/**
 * drizzle/postgres/ is current with src/storage/postgres/: drizzle-kit, run on a copy of the
 * migrations, finds nothing to generate. With the parity test (migrations ≡ SQLite's), the
 * PostgreSQL schema file, its migrations and the SQLite schema cannot drift apart. Needs no
 * PostgreSQL server: drizzle-kit compares the schema with the last migration's snapshot.
 */
import { setDefaultTimeout, test } from 'bun:test'
import { expectNothingToGenerate } from '../support/drizzle-kit.ts'

setDefaultTimeout(60_000)

test('drizzle-kit finds no change to generate for PostgreSQL', () => {
  expectNothingToGenerate({
    dialect: 'postgresql',
    schema: ['src/storage/postgres/schema.ts', 'src/storage/postgres/coordination-schema.ts'],
    migrations: 'drizzle/postgres',
  })
})
