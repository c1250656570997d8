/**
 * drizzle/ is current with the SQLite schema that drizzle.config.ts names (the adapter's own,
 * src/storage/sqlite/schema.ts): drizzle-kit, run on a copy of the migrations with that config's
 * schema, finds nothing to generate. A schema moved without its config, or changed without its
 * migration, fails here rather than at the next `bun run db:generate`.
 */
import { expect, setDefaultTimeout, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import drizzleConfig from '../../drizzle.config.ts'
import { expectNothingToGenerate } from '../support/drizzle-kit.ts'

setDefaultTimeout(60_000)

test("drizzle.config.ts names the SQLite adapter's schema, and drizzle-kit finds no change to generate", () => {
  expect(drizzleConfig.schema).toBe('./src/storage/sqlite/schema.ts')
  expect(existsSync(join(import.meta.dir, '..', '..', drizzleConfig.schema as string))).toBe(true)
  // The SQLite migrations only: drizzle/postgres/ is the other dialect's (its own test).
  expectNothingToGenerate({
    dialect: 'sqlite',
    schema: [drizzleConfig.schema as string],
    migrations: 'drizzle',
    exclude: 'drizzle/postgres',
  })
})
