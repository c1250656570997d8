/**
 * The start-up summary in PostgreSQL mode names the database the server uses (host, port and
 * name, never the password), not the SQLite file DATABASE_PATH would name in SQLite mode.
 */
import { afterAll, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { type RunningApp, startApp } from '../../src/app.ts'
import { loadConfig } from '../../src/config.ts'
import { createLogger } from '../../src/log.ts'
import { startupBanner } from '../../src/startup-banner.ts'
import { describeWithPostgres, migratedDatabase } from '../support/postgres.ts'
import { scratchDir } from '../support/scratch.ts'
import { layDownSelfSigned } from '../support/tls-seed.ts'

describeWithPostgres('the start-up summary in PostgreSQL mode', () => {
  let app: RunningApp | undefined
  const dir = scratchDir('pigeonhole-banner-')
  afterAll(async () => {
    await app?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  test('names the database, never its password, and no SQLite file', async () => {
    const url = new URL(await migratedDatabase())
    url.password = 'banner-secret-password'
    const databasePath = join(dir, 'pigeonhole.db')
    const config = loadConfig({
      PORT: '0',
      SMTP_PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_PATH: databasePath,
      DATABASE_URL: url.href,
      RECEIVING_DOMAIN: 'inbox.test',
    })
    await layDownSelfSigned(databasePath, config.receivingDomain)
    app = await startApp({ config, logger: createLogger('error', () => {}) })
    const banner = await startupBanner(app)
    const line = banner.split('\n').find((l) => l.trimStart().startsWith('Database'))!
    expect(line).toContain(`PostgreSQL postgres://postgres@${url.host}${url.pathname}`)
    expect(banner).not.toContain('banner-secret-password')
    expect(banner).not.toContain('pigeonhole.db')
  })
})
