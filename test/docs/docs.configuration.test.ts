/** docs/configuration.md lists exactly what src/config.ts defines. */
import { expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { configTable } from '../../src/config.ts'

test('docs/configuration.md lists every environment variable with its current default', () => {
  const page = readFileSync(join(import.meta.dir, '..', '..', 'docs', 'configuration.md'), 'utf8')
  // If this fails after changing src/config.ts, run: bun run docs:config
  expect(page).toContain(`<!-- config-table:start -->\n${configTable()}\n<!-- config-table:end -->`)
})
