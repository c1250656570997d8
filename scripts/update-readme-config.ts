/** Rewrites the configuration table in README.md from src/config.ts (`bun scripts/update-readme-config.ts`). */
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { configTable } from '../src/config.ts'

const path = join(import.meta.dir, '..', 'README.md')
const readme = readFileSync(path, 'utf8')
const updated = readme.replace(/(<!-- config-table:start -->\n)[\s\S]*?(<!-- config-table:end -->)/, `$1${configTable()}\n$2`)
writeFileSync(path, updated)
