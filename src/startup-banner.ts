/**
 * The plain-words summary printed at start-up for the person who ran `bun run start`:
 * where the API, the docs page and the SMTP listener are, and what to do next. It goes to
 * stderr so stdout stays one JSON log line per event for machines.
 */
import { resolve } from 'node:path'
import type { RunningApp } from './app.ts'
import { listOrganizations } from './core/admin.ts'

export function startupBanner(app: RunningApp): string {
  const { config, storage } = app.services
  const hasOrganisation = listOrganizations(storage.db).length > 0
  const next = hasOrganisation
    ? ['Next: make a key for your organisation (ids: bun src/cli.ts orgs list):', '  bun src/cli.ts keys create <org-id>']
    : [
        'Next: in another terminal, create an organisation without monthly limits for local testing, then a key:',
        '  bun src/cli.ts orgs create my-team --local',
        '  bun src/cli.ts keys create <the org id it printed>',
      ]
  return [
    '',
    'Pigeonhole is running.',
    `  API        ${app.publicUrls.baseUrl}   (set BASE_URL for the public address)`,
    `  API docs   ${app.publicUrls.baseUrl}/openapi`,
    `  SMTP       port ${app.smtpPort} on ${config.host}; inbox addresses end in @${config.receivingDomain}`,
    `  Database   ${resolve(config.databasePath)}`,
    ...next,
    'Stop with Ctrl+C. README.md walks through the first test.',
    '',
  ].join('\n')
}
