/**
 * /health is liveness, /ready is readiness. With the shared database unreachable every machine
 * would fail a /health that touched it, and a platform routing by it (Fly's proxy, whose
 * routing check fly.toml points at /health) would stop sending them traffic: clients would
 * meet the platform's errors. So /health answers while the database is gone; /ready fails;
 * and the clients get the interface's own answers: `503 storage_unavailable` with
 * `Retry-After` from createInbox and `451` at RCPT TO.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { startApp } from '../../src/app.ts'
import type { RunningApp } from '../../src/app/start.ts'
import { CLI_ACTOR } from '../../src/core/audit/audit.ts'
import { createApiKey } from '../../src/core/api-keys/keys.ts'
import { createOrganization } from '../../src/core/organizations/organizations.ts'
import { loadConfig } from '../../src/config.ts'
import { createLogger } from '../../src/log.ts'
import { layDownSelfSigned } from '../support/tls-seed.ts'
import { describeWithPostgres, migratedDatabase } from '../support/postgres.ts'
import { scratchDir } from '../support/scratch.ts'
import { SmtpClient } from '../support/smtp.ts'
import { type TcpCut, tcpCut } from '../support/tcp-cut.ts'

setDefaultTimeout(30_000)

describeWithPostgres('the shared database unreachable', () => {
  let relay: TcpCut
  let app: RunningApp
  let dir: string
  let key: string

  beforeAll(async () => {
    const direct = new URL(await migratedDatabase())
    relay = tcpCut(direct.hostname, Number(direct.port))
    const relayed = new URL(direct)
    relayed.hostname = '127.0.0.1'
    relayed.port = String(relay.port)
    dir = scratchDir('pigeonhole-liveness-')
    const databasePath = join(dir, 'pigeonhole.db')
    const config = loadConfig({
      PORT: '0',
      SMTP_PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_PATH: databasePath,
      DATABASE_URL: relayed.href,
      DATABASE_POOL_SIZE: '2',
      RECEIVING_DOMAIN: 'inbox.test',
    })
    await layDownSelfSigned(databasePath, config.receivingDomain)
    app = await startApp({ config, logger: createLogger('silent') })
    const org = await createOrganization(app.services, CLI_ACTOR, { name: 'liveness', preset: 'hosted' })
    key = (await createApiKey(app.services, CLI_ACTOR, { organizationId: org.id })).key
  })
  afterAll(async () => {
    relay?.restore()
    await app?.stop()
    relay?.stop()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  test('/health stays 200 while /ready fails, and clients get the documented 503 and 451', async () => {
    const inbox = (await (
      await fetch(`${app.httpUrl}/v1/inboxes`, { method: 'POST', headers: { authorization: `Bearer ${key}` } })
    ).json()) as { data: { address: string } }
    relay.cut()

    const health = await fetch(`${app.httpUrl}/health`)
    expect(health.status).toBe(200)
    expect(await health.json()).toEqual({ status: 'ok', service: 'pigeonhole' })
    expect((await fetch(`${app.httpUrl}/ready`)).status).toBe(503)

    const created = await fetch(`${app.httpUrl}/v1/inboxes`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
    })
    expect(created.status).toBe(503)
    expect(created.headers.get('retry-after')).toBe('5')
    expect(((await created.json()) as { error: { code: string } }).error.code).toBe('storage_unavailable')

    const smtp = await SmtpClient.connect(app.smtpPort)
    expect((await smtp.command('EHLO sender.example')).code).toBe(250)
    expect((await smtp.command('MAIL FROM:<a@sender.example>')).code).toBe(250)
    expect((await smtp.command(`RCPT TO:<${inbox.data.address}>`)).code).toBe(451)
    smtp.destroy()
  })
})
