/**
 * drizzle/ is current with the SQLite schema that drizzle.config.ts names (the adapter's own,
 * src/storage/sqlite/schema.ts): drizzle-kit, run on a copy of the migrations with that config's
 * schema, finds nothing to generate. A schema moved without its config, or changed without its
 * migration, fails here rather than at the next `bun run db:generate`.
 */
import { expect, setDefaultTimeout, test } from 'bun:test'
import { cpSync, existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import drizzleConfig from '../../drizzle.config.ts'
import { scratchDir } from '../support/scratch.ts'

setDefaultTimeout(60_000)

const ROOT = join(import.meta.dir, '..', '..')

test("drizzle.config.ts names the SQLite adapter's schema, and drizzle-kit finds no change to generate", () => {
  expect(drizzleConfig.schema).toBe('./src/storage/sqlite/schema.ts')
  const schema = join(ROOT, drizzleConfig.schema as string)
  expect(existsSync(schema)).toBe(true)
  const folder = scratchDir('pigeonhole-sqlite-migrations-')
  try {
    const out = join(folder, 'drizzle')
    // The SQLite migrations only: drizzle/postgres/ is the other dialect's (its own test).
    cpSync(join(ROOT, 'drizzle'), out, {
      recursive: true,
      filter: (source) => !source.startsWith(join(ROOT, 'drizzle', 'postgres')),
    })
    const before = readdirSync(out).sort()
    const config = join(folder, 'drizzle.config.json')
    writeFileSync(config, JSON.stringify({ dialect: 'sqlite', schema, out: './drizzle' }))
    const run = Bun.spawnSync(
      ['bun', join(ROOT, 'node_modules', 'drizzle-kit', 'bin.cjs'), 'generate', '--config', config],
      { cwd: folder, stdout: 'pipe', stderr: 'pipe' },
    )
    const output = `${run.stdout.toString()}${run.stderr.toString()}`
    expect(run.exitCode, output).toBe(0)
    expect(output).toContain('No schema changes')
    expect(readdirSync(out).sort()).toEqual(before)
  } finally {
    rmSync(folder, { recursive: true, force: true })
  }
})
