/**
 * The plain-words summary printed at start-up for the person who ran `bun run start`:
 * where the API, the docs page and the SMTP listener are, and what to do next (the
 * console's one-time setup link while no console user exists). It goes to stderr so
 * stdout stays one JSON log line per event for machines.
 */
import { resolve } from 'node:path'
import type { RunningApp } from './app.ts'
import { listOrganizations } from './core/organizations/organizations.ts'
import { describePostgresUrl } from './storage/postgres/client.ts'

const CLI_FIRST_STEPS = [
  '  bun src/cli.ts orgs create my-team --local',
  '  bun src/cli.ts keys create <the org id it printed>',
]

async function nextSteps(app: RunningApp): Promise<string[]> {
  if (app.setupUrl) {
    return [
      'Next: finish setting it up in your browser (choose "Local testing" on a developer machine):',
      '',
      `    ${app.setupUrl}`,
      '',
      '  (The link works once; `bun src/cli.ts setup-link` prints it again.)',
      'Or, in another terminal, create an organisation with limits a test run never meets, then a key:',
      ...CLI_FIRST_STEPS,
    ]
  }
  if ((await listOrganizations(app.services)).length > 0) {
    return [
      'Next: make a key for your organisation (ids: bun src/cli.ts orgs list):',
      '  bun src/cli.ts keys create <org-id>',
    ]
  }
  return [
    'Next: in another terminal, create an organisation with limits a test run never meets, then a key:',
    ...CLI_FIRST_STEPS,
  ]
}

export async function startupBanner(app: RunningApp): Promise<string> {
  const { config } = app.services
  // PostgreSQL mode keeps no database in DATABASE_PATH: name the one it uses (never its password).
  const database = config.databaseUrl
    ? `PostgreSQL ${describePostgresUrl(config.databaseUrl)}`
    : resolve(config.databasePath)
  return [
    '',
    'Pigeonhole is running.',
    `  API        ${app.publicUrls.baseUrl}   (set BASE_URL for the public address)`,
    `  API docs   ${app.publicUrls.baseUrl}/openapi`,
    `  SMTP       port ${app.smtpPort} on ${config.host}; inbox addresses end in @${config.receivingDomain}`,
    `  Database   ${database}`,
    ...(await nextSteps(app)),
    'Stop with Ctrl+C. README.md walks through the first test.',
    '',
  ].join('\n')
}
