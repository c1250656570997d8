/**
 * drizzle-kit run on a copy of a dialect's migrations, for the tests that hold each migrations
 * folder current with its schema (storage.migrations-current, postgres.migrations-current).
 */
import { expect } from 'bun:test'
import { cpSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { scratchDir } from './scratch.ts'

const ROOT = join(import.meta.dir, '..', '..')

/**
 * Copies `migrations` (relative to the repository, leaving out `exclude`), runs `drizzle-kit
 * generate` against `schema`, and expects it to find no change and write nothing.
 */
export function expectNothingToGenerate(options: {
  dialect: 'sqlite' | 'postgresql'
  schema: string[]
  migrations: string
  exclude?: string
}): void {
  const folder = scratchDir(`pigeonhole-${options.dialect}-migrations-`)
  try {
    const out = join(folder, 'migrations')
    const from = join(ROOT, options.migrations)
    const excluded = options.exclude === undefined ? null : join(ROOT, options.exclude)
    cpSync(from, out, { recursive: true, filter: (source) => excluded === null || !source.startsWith(excluded) })
    const before = readdirSync(out).sort()
    const config = join(folder, 'drizzle.config.json')
    // drizzle-kit takes `out` relative to its working folder.
    writeFileSync(
      config,
      JSON.stringify({
        dialect: options.dialect,
        schema: options.schema.map((file) => join(ROOT, file)),
        out: './migrations',
      }),
    )
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
}
