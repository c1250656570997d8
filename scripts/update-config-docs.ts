/** Rewrites the configuration table in docs/configuration.md from src/config.ts (`bun run docs:config`). */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { configTable } from '../src/config.ts'

const path = join(import.meta.dir, '..', 'docs', 'configuration.md')
const page = readFileSync(path, 'utf8')
const updated = page.replace(
  /(<!-- config-table:start -->\n)[\s\S]*?(<!-- config-table:end -->)/,
  `$1${configTable()}\n$2`,
)
writeFileSync(path, updated)
