/**
 * Makes a SQLite database shaped like a year of a team's use through the real server
 * (scripts/year-of-use/generate.ts says what is in it), then, with --copy-to, moves it into
 * an empty PostgreSQL database with `cli db copy`, reports the figures, and reads every
 * message and attachment through the API of both (compare-api.ts): the run fails unless
 * the copy serves exactly what the original served.
 *
 *   bun scripts/year-of-use.ts [--dir DIR] [--messages 10000] [--audit-events 1000]
 *                              [--attachment-bytes 4096] [--copy-to postgres://…]
 *
 * DIR (default: a new folder under the system's temp folder) must be empty or absent; the
 * database is DIR/pigeonhole.db and stays there.
 */
import { mkdirSync, mkdtempSync, readdirSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { describePostgresUrl } from '../src/storage/postgres/client.ts'
import { readThroughApi } from './year-of-use/compare-api.ts'
import { FULL_YEAR, makeYearOfUse } from './year-of-use/generate.ts'

const args = process.argv.slice(2)
const option = (name: string) => {
  const at = args.indexOf(`--${name}`)
  return at >= 0 ? args[at + 1] : undefined
}
const number = (name: string, fallback: number) => {
  const value = option(name)
  if (value === undefined) return fallback
  if (!/^\d+$/.test(value)) throw new Error(`--${name} expects a whole number`)
  return Number(value)
}

const dir = option('dir') ?? mkdtempSync(join(tmpdir(), 'pigeonhole-year-'))
mkdirSync(dir, { recursive: true })
if (readdirSync(dir).length > 0) throw new Error(`${dir} is not empty`)
const shape = {
  ...FULL_YEAR,
  messages: number('messages', FULL_YEAR.messages),
  auditEvents: number('audit-events', FULL_YEAR.auditEvents),
  attachmentBytes: number('attachment-bytes', FULL_YEAR.attachmentBytes),
}
const log = (line: string) => console.error(`[${new Date().toISOString().slice(11, 19)}] ${line}`)

const made = await makeYearOfUse(dir, shape, log)
log(`made ${made.databasePath}: ${(made.databaseBytes / 1e6).toFixed(1)} MB in ${made.seconds.toFixed(1)} s`)
for (const [table, rows] of Object.entries(made.rows)) console.log(`${table}\t${rows}`)

const url = option('copy-to')
if (url) {
  // The figures of record for docs/scaling.md come from here: say how busy the machine was.
  log(
    `copying into ${describePostgresUrl(url)}; load average ${loadavg()
      .map((n) => n.toFixed(2))
      .join(' ')}`,
  )
  const started = performance.now()
  const child = Bun.spawn([process.execPath, 'src/cli.ts', 'db', 'copy', '--to', url], {
    cwd: join(import.meta.dir, '..'),
    env: { ...process.env, DATABASE_PATH: made.databasePath },
    stdout: 'inherit',
    stderr: 'inherit',
  })
  const code = await child.exited
  const seconds = (performance.now() - started) / 1000
  const cpu = child.resourceUsage()?.cpuTime
  const cpuSeconds = cpu ? Number(cpu.user + cpu.system) / 1e6 : Number.NaN
  log(
    `db copy exited ${code} after ${seconds.toFixed(1)} s wall, ${cpuSeconds.toFixed(1)} s CPU of the CLI; ${(made.databaseBytes / 1e6 / seconds).toFixed(1)} MB/s of SQLite file`,
  )
  if (code !== 0) process.exit(code)
  const original = await readThroughApi(made, '')
  const copy = await readThroughApi(made, url)
  log(`through the API: SQLite ${JSON.stringify(original)}, PostgreSQL ${JSON.stringify(copy)}`)
  if (original.sha256 !== copy.sha256 || original.messages !== copy.messages) {
    log('the copy does NOT serve what the original served')
    process.exit(1)
  }
  log(`the copy serves exactly what the original served: ${copy.messages} messages, ${copy.attachments} attachments`)
}
