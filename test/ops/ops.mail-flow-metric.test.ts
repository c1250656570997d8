/**
 * `pigeonhole_seconds_since_last_message_stored`: seconds on the injected clock since this
 * process last stored a message, counted from its start before the first; back to 0 when mail
 * arrives. On both storage modes: the server the run's backend gives (harness.ts), and a
 * PostgreSQL-mode server explicitly, so the SQLite-only run proves PostgreSQL mode too.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { startApp } from '../../src/app.ts'
import { ManualClock } from '../../src/clock.ts'
import { loadConfig } from '../../src/config.ts'
import { createApiKey } from '../../src/core/api-keys/keys.ts'
import { CLI_ACTOR } from '../../src/core/audit/audit.ts'
import { createOrganization } from '../../src/core/organizations/organizations.ts'
import { createLogger } from '../../src/log.ts'
import { describeForBackends, startTestServer } from '../support/harness.ts'
import { describeWithPostgres, migratedDatabase } from '../support/postgres.ts'
import { scratchDir } from '../support/scratch.ts'
import { sendMail, simpleMessage } from '../support/smtp.ts'
import { layDownSelfSigned } from '../support/tls-seed.ts'

setDefaultTimeout(60_000)

const TOKEN = 'metrics-token-0123456789abcdef'
const METRIC = 'pigeonhole_seconds_since_last_message_stored'

interface Target {
  url: string
  smtpPort: number
  key: string
  clock: ManualClock
  stop(): Promise<void>
}

async function secondsSinceStored(target: Target): Promise<number[]> {
  const text = await (await fetch(`${target.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text()
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${METRIC} `))
    .map((line) => Number(line.split(' ')[1]))
}

function proves(label: string, start: () => Promise<Target>) {
  let target: Target
  beforeAll(async () => {
    target = await start()
  })
  afterAll(() => target.stop())

  test(`${label}: counts from the start, falls to 0 when a message is stored, then counts again`, async () => {
    expect(await secondsSinceStored(target)).toEqual([0])
    target.clock.advance(90_000)
    expect(await secondsSinceStored(target)).toEqual([90])

    const created = await fetch(`${target.url}/v1/inboxes`, {
      method: 'POST',
      headers: { authorization: `Bearer ${target.key}` },
    })
    const inbox = (await created.json()).data
    const sent = await sendMail(
      target.smtpPort,
      { to: [inbox.address] },
      simpleMessage({ to: inbox.address, subject: 'flowing' }),
    )
    expect(sent.data?.code).toBe(250)
    expect(await secondsSinceStored(target)).toEqual([0])

    target.clock.advance(30_500)
    expect(await secondsSinceStored(target)).toEqual([30.5])
    // A refused message is not mail flowing.
    const refused = await sendMail(
      target.smtpPort,
      { to: ['nobody@inbox.test'] },
      simpleMessage({ to: 'nobody@inbox.test' }),
    )
    expect(refused.rcpt[0]?.code).toBe(550)
    expect(await secondsSinceStored(target)).toEqual([30.5])
  })
}

describeForBackends(
  ['sqlite', 'postgres'],
  'each machine of the pair counts its own mail; one scrape reaches one of them',
  'seconds since the last stored message, on the run backend',
  () => {
    proves('run backend', async () => {
      const clock = new ManualClock()
      const server = await startTestServer({ clock, env: { METRICS_TOKEN: TOKEN } })
      const { key } = await server.tenant()
      return { url: server.url, smtpPort: server.app.smtpPort, key, clock, stop: () => server.stop() }
    })
  },
)

describeWithPostgres('seconds since the last stored message, in PostgreSQL mode', () => {
  proves('PostgreSQL mode', async () => {
    const clock = new ManualClock()
    const dir = scratchDir('pigeonhole-flow-metric-')
    const databasePath = join(dir, 'unused.db')
    await layDownSelfSigned(databasePath, 'inbox.test')
    const config = loadConfig({
      PORT: '0',
      SMTP_PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_PATH: databasePath,
      DATABASE_URL: await migratedDatabase(),
      RECEIVING_DOMAIN: 'inbox.test',
      METRICS_TOKEN: TOKEN,
    })
    const app = await startApp({ config, clock, logger: createLogger('error', () => {}) })
    const org = await createOrganization(app.services, CLI_ACTOR, { name: 'flow', preset: 'hosted' })
    const { key } = await createApiKey(app.services, CLI_ACTOR, { organizationId: org.id })
    return {
      url: app.httpUrl,
      smtpPort: app.smtpPort,
      key,
      clock,
      async stop() {
        await app.stop()
        rmSync(dir, { recursive: true, force: true })
      },
    }
  })
})
