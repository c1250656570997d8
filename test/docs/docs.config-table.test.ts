/** The README's configuration table is exactly what src/config.ts defines. */
import { expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { configTable } from '../../src/config.ts'

test('README lists every environment variable with its current default', () => {
  const readme = readFileSync(join(import.meta.dir, '..', '..', 'README.md'), 'utf8')
  // If this fails after changing src/config.ts, run: bun scripts/update-readme-config.ts
  expect(readme).toContain(`<!-- config-table:start -->\n${configTable()}\n<!-- config-table:end -->`)
})
