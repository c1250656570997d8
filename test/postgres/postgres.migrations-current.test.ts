/**
 * drizzle/postgres/ is current with src/storage/postgres/: drizzle-kit, run on a copy of the
 * migrations, finds nothing to generate. With the parity test (migrations ≡ SQLite's), the
 * PostgreSQL schema file, its migrations and the SQLite schema cannot drift apart. Needs no
 * PostgreSQL server: drizzle-kit compares the schema with the last migration's snapshot.
 */
import { expect, setDefaultTimeout, test } from 'bun:test'
import { cpSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { scratchDir } from '../support/scratch.ts'

setDefaultTimeout(60_000)

const ROOT = join(import.meta.dir, '..', '..')

test('drizzle-kit finds no change to generate for PostgreSQL', () => {
  const folder = scratchDir('pigeonhole-pg-migrations-')
  try {
    const out = join(folder, 'postgres')
    cpSync(join(ROOT, 'drizzle', 'postgres'), out, { recursive: true })
    const before = readdirSync(out).sort()
    const config = join(folder, 'drizzle.config.json')
    const schema = ['schema.ts', 'coordination-schema.ts'].map((file) => join(ROOT, 'src', 'storage', 'postgres', file))
    // drizzle-kit takes `out` relative to its working folder.
    writeFileSync(config, JSON.stringify({ dialect: 'postgresql', schema, out: './postgres' }))
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
