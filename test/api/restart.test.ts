/** What a restart on the same SQLite file must leave behind (a crash mid-createInbox). */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startApp } from '../../src/app.ts'
import { loadConfig } from '../../src/config.ts'
import { createLogger } from '../../src/log.ts'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { expectError } from '../support/shapes.ts'

let server: TestServer
beforeAll(async () => {
  server = await startTestServer()
})
afterAll(() => server.stop())

/** A second process on the same file, as after a crash and a restart. */
async function restart() {
  const app = await startApp({
    config: loadConfig({ PORT: '0', SMTP_PORT: '0', HOST: '127.0.0.1', DATABASE_PATH: server.databasePath, RECEIVING_DOMAIN: 'inbox.test' }),
    logger: createLogger('silent'),
  })
  const post = (key: string, idempotencyKey: string, body: unknown) =>
    fetch(`${app.httpUrl}/v1/inboxes`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'idempotency-key': idempotencyKey }, body: JSON.stringify(body) })
  return { app, post }
}

test('a createInbox cut off by a crash neither blocks its key nor holds its address after restart', async () => {
  const { key, organizationId } = server.tenant()
  const now = new Date().toISOString()
  // The state a process leaves when it dies between claiming the key and activating the inbox.
  const sqlite = server.app.services.storage.sqlite
  sqlite
    .query("INSERT INTO idempotency_records (organization_id, idempotency_key, request_fingerprint, state, created_at, expires_at) VALUES (?, 'crashed-key-1', 'x', 'in_progress', ?, ?)")
    .run(organizationId, now, new Date(Date.now() + 86_400_000).toISOString())
  sqlite
    .query("INSERT INTO inboxes (id, organization_id, local_part, address, state, created_at) VALUES (?, ?, 'crashed-box', 'crashed-box@inbox.test', 'creating', ?)")
    .run(`inbox_${'c'.repeat(32)}`, organizationId, now)
  expectError(await server.post('/v1/inboxes', key, { prefix: 'crashed-box' }), 409, 'address_unavailable')

  const { app, post } = await restart()
  try {
    // Nothing runs at boot, so the claim is abandoned: the client's one retry must succeed.
    const retry = await post(key, 'crashed-key-1', { prefix: 'crashed-box' })
    expect(retry.status).toBe(201)
    expect(((await retry.json()) as any).data.local_part).toBe('crashed-box')
  } finally {
    await app.stop()
  }
})
