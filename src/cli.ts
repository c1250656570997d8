/**
 * Admin CLI. Same environment as the server (DATABASE_PATH); safe to run while the server
 * runs (WAL). Results go to stdout, the requested value on the last line.
 *
 *   bun src/cli.ts setup-link       (the one-time /setup link, while no console user exists)
 *   bun src/cli.ts orgs create <name> [--local]
 *   bun src/cli.ts orgs list
 *   bun src/cli.ts orgs limits <org-id> [--active-inboxes N] [--emails-per-month N] ...
 *   bun src/cli.ts users reset-password <email>
 *   bun src/cli.ts users sign-out <email>   (ends every session of the user)
 *   bun src/cli.ts keys create <org-id>
 *   bun src/cli.ts keys list <org-id>
 *   bun src/cli.ts keys revoke <key-or-public-id>
 *   bun src/cli.ts config            (prints the configuration table in Markdown)
 *   bun src/cli.ts db copy --to <postgres-url>
 *                    (copies the stopped server's SQLite file into an empty PostgreSQL database)
 *   bun src/cli.ts canary [--url U] [--key K] [--smtp HOST[:PORT] | --dns R] [--timeout S]
 *                    (is mail flowing? from anywhere; no database)
 *
 * The database file it opened is named on stderr; a missing one is created only with --create.
 * With DATABASE_URL set, every command but `db copy` works on that PostgreSQL database
 * instead (migrated first, as the server does at start); `db copy` still reads DATABASE_PATH.
 */
import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import { systemClock } from './clock.ts'
import { configTable, loadConfigOrExit, postgresUrlProblem } from './config.ts'
import { canaryCommand } from './cli/canary-command.ts'
import {
  createKeyCommand,
  createOrg,
  orgLimitsCommand,
  printSetupLink,
  resetPasswordCommand,
  revokeKeyCommand,
  signOutCommand,
} from './cli/console-commands.ts'
import { listOrganizationKeys } from './core/api-keys/keys.ts'
import { listOrganizations } from './core/organizations/organizations.ts'
import { dialectOf, openBackend } from './app/backend.ts'
import { describePostgresUrl } from './storage/postgres/client.ts'
import { CopyRefused, copySqliteFileToPostgres } from './storage/postgres/copy-file.ts'
import { progressPrinter, summaryLine } from './storage/postgres/copy-progress.ts'
import { organizations } from './storage/sqlite/schema.ts'
import { getTableColumns } from 'drizzle-orm'

const USAGE = `usage:
  bun src/cli.ts setup-link
  bun src/cli.ts orgs create <name> [--local]
  bun src/cli.ts orgs list
  bun src/cli.ts orgs limits <org-id> [--active-inboxes N] [--emails-per-month N] [--inbox-burst N] [--org-burst N]
                 [--requests-per-key N] [--requests-per-org N] [--long-polls-per-key N] [--long-polls-per-org N]
  bun src/cli.ts users reset-password <email>
  bun src/cli.ts users sign-out <email>
  bun src/cli.ts keys create <org-id>
  bun src/cli.ts keys list <org-id>
  bun src/cli.ts keys revoke <key-or-public-id>
  bun src/cli.ts config
  bun src/cli.ts db copy --to postgres://user:password@host:5432/database
  bun src/cli.ts canary [--url https://api.example] [--key ph_live_…]
                 [--smtp host[:port] | --dns resolver[,resolver]] [--timeout seconds]
                 (defaults: PIGEONHOLE_URL or BASE_URL, PIGEONHOLE_KEY, PIGEONHOLE_SMTP or the domain's MX)
                 (quote the URL in a shell; percent-encode '/', '?', '#' and '%' in the password)
add --create to make a new database when DATABASE_PATH names none yet`

function fail(message: string, code = 1): never {
  console.error(message)
  process.exit(code)
}

const argv = process.argv.slice(2)
// --create: the only way the CLI makes a new database (a CLI run from the wrong folder
// would otherwise create a second, empty one whose keys the server never sees).
const allowCreate = argv.includes('--create')
const [group, action, arg, ...rest] = argv.filter((word) => word !== '--create')
if (group === 'config') {
  console.log(configTable())
  process.exit(0)
}
if (group === 'canary') await canaryCommand(argv.slice(1), fail, USAGE) // exits; needs no database

const config = loadConfigOrExit()
// PostgreSQL mode: the server's database is DATABASE_URL. `db copy` reads the SQLite file
// whatever DATABASE_URL says: it is how a file gets into PostgreSQL in the first place.
const postgresMode = dialectOf(config) === 'postgres' && group !== 'db'
const databaseFile = resolve(config.databasePath)
if (!postgresMode && !existsSync(databaseFile) && !allowCreate) {
  fail(
    `No database at ${databaseFile}.\n` +
      "Run the CLI from the folder where the server runs, or set DATABASE_PATH to the server's file. " +
      'To start a new, empty database there, add --create.',
  )
}
console.error(`database: ${postgresMode ? describePostgresUrl(config.databaseUrl) : databaseFile}`)
if (group === 'db') {
  const url = rest[0]
  if (action !== 'copy' || arg !== '--to' || !url || rest.length > 1) fail(USAGE, 64)
  const problem = postgresUrlProblem(url)
  if (problem) fail(`db copy --to ${describePostgresUrl(url)}: ${problem}\n${USAGE}`, 64)
  try {
    const report = await copySqliteFileToPostgres(
      config.databasePath,
      url,
      (line) => console.error(line),
      progressPrinter((line) => console.error(line)),
    )
    console.error(summaryLine(report))
    console.log('table\trows\tsha256')
    for (const table of report.tables) console.log(`${table.table}\t${table.rows}\t${table.sha256}`)
    console.log(
      `copied and verified ${report.tables.reduce((sum, table) => sum + table.rows, 0)} ` +
        `rows into ${describePostgresUrl(url)}`,
    )
  } catch (error) {
    if (error instanceof CopyRefused) fail(error.message)
    throw error
  }
  process.exit(0)
}
// The store alone, on the server's database (openBackend decides the mode, as for the server).
const backend = await openBackend(config, { use: 'admin' })
const { store } = backend
/**
 * Tab-separated rows under a header naming every column (snake_case); '-' for null, as limits without an override are.
 */
const table = (rows: Record<string, unknown>[], columns: string[]) => {
  console.log(columns.map((c) => c.replace(/[A-Z]/g, (l) => `_${l.toLowerCase()}`)).join('\t'))
  for (const row of rows) console.log(columns.map((c) => row[c] ?? '-').join('\t'))
}

const cli = { config, store, clock: systemClock, fail }

try {
  switch (group === 'setup-link' ? group : `${group} ${action}`) {
    case 'setup-link':
      await printSetupLink(cli)
      break
    case 'orgs create':
      await createOrg(cli, [arg ?? '', ...rest].filter(Boolean))
      break
    case 'orgs limits':
      await orgLimitsCommand(cli, [arg ?? '', ...rest].filter(Boolean))
      break
    case 'users reset-password':
      await resetPasswordCommand(cli, arg)
      break
    case 'users sign-out':
      await signOutCommand(cli, arg)
      break
    case 'orgs list':
      table(await listOrganizations(cli), Object.keys(getTableColumns(organizations)))
      break
    case 'keys create': {
      if (!arg) fail(USAGE, 64)
      await createKeyCommand(cli, arg)
      break
    }
    case 'keys list':
      if (!arg) fail(USAGE, 64)
      table(await listOrganizationKeys(cli, { organizationId: arg }), [
        'publicId',
        'createdAt',
        'lastUsedAt',
        'revokedAt',
      ])
      break
    case 'keys revoke':
      if (!arg) fail(USAGE, 64)
      await revokeKeyCommand(cli, arg)
      break
    default:
      fail(USAGE, 64)
  }
} finally {
  await backend.close()
}
