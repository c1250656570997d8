/**
 * createInbox while Cloudflare is slow (idempotency), and when the rule was made but the
 * inbox row could not be written (the rule must be taken back).
 */
import { afterEach, beforeEach, expect, test } from 'bun:test'
import { errorCode, type Tenant } from '../support/harness.ts'
import { sendMail, simpleMessage } from '../support/smtp.ts'
import { idempotencyRecordCount, inboxRows, openDatabaseFile, startWithFakeCloudflare } from '../support/routing.ts'

let started: Awaited<ReturnType<typeof startWithFakeCloudflare>>
let tenant: Tenant
beforeEach(async () => {
  // A long timeout: these tests hold Cloudflare's answer on purpose.
  started = await startWithFakeCloudflare({ timeoutMs: 30_000 })
  tenant = await started.server.tenant()
})
afterEach(() => started.stop())

test('while the provider is slow, the same key gets 409 idempotency_in_progress, then the cached 201', async () => {
  const { server, fake } = started
  const held = fake.hold('POST')
  const headers = { 'idempotency-key': 'slow-provider-key' }
  const first = server.post('/v1/inboxes', tenant.key, { prefix: 'slow-box' }, headers)
  await held.received

  const second = await server.post('/v1/inboxes', tenant.key, { prefix: 'slow-box' }, headers)
  expect(second.status).toBe(409)
  expect(errorCode(second)).toBe('idempotency_in_progress')
  expect(second.headers.get('retry-after')).toBe('1')
  // The address is held by the unfinished request, yet no inbox is visible.
  expect(errorCode(await server.post('/v1/inboxes', tenant.key, { prefix: 'slow-box' }))).toBe('address_unavailable')
  expect((await server.get('/v1/inboxes', tenant.key)).body.data).toEqual([])
  const early = await sendMail(
    server.app.smtpPort,
    { to: ['slow-box@inbox.test'] },
    simpleMessage({ to: 'slow-box@inbox.test' }),
  )
  expect(early.rcpt[0]!.code).toBe(550)

  held.release()
  const done = await first
  expect(done.status).toBe(201)
  const replay = await server.post('/v1/inboxes', tenant.key, { prefix: 'slow-box' }, headers)
  expect(replay.status).toBe(201)
  expect(replay.body).toEqual(done.body)
  expect(fake.count('POST')).toBe(1)
  expect(fake.rulesFor('slow-box@inbox.test')).toHaveLength(1)
})

test('the rule is removed when the organisation was deleted while the rule was being made', async () => {
  const { server, fake } = started
  const held = fake.hold('POST')
  const pending = server.post(
    '/v1/inboxes',
    tenant.key,
    { prefix: 'orphan-box' },
    { 'idempotency-key': 'orphan-key-1' },
  )
  await held.received
  // An operator removes the organisation by hand (sqlite3) meanwhile; its rows cascade away.
  const db = openDatabaseFile(server)
  db.run('DELETE FROM organizations WHERE id = ?', [tenant.organizationId])
  db.close()
  held.release()

  const failed = await pending
  expect(failed.status).toBe(500)
  expect(errorCode(failed)).toBe('internal_error')
  const [post] = fake.requests.filter((r) => r.method === 'POST')
  const deletes = fake.requests.filter((r) => r.method === 'DELETE')
  expect(post).toBeDefined()
  expect(deletes).toHaveLength(1)
  expect(fake.rules.size).toBe(0)
  expect(inboxRows(server)).toEqual([])
  expect(idempotencyRecordCount(server)).toBe(0)
  expect(server.logs.some((line) => line.event === 'inbox_activation_failed')).toBe(true)
})

test('the rule is removed when the database stays locked past the busy timeout', async () => {
  const { server, fake } = started
  const held = fake.hold('POST')
  const pending = server.post('/v1/inboxes', tenant.key, { prefix: 'locked-box' })
  await held.received
  // The server's connection waits out its busy_timeout (5 s in production); a shorter one
  // on this test's server reaches the same failure without the wait.
  server.app.storage!.sqlite.exec('PRAGMA busy_timeout = 200')
  // Another process (a long sqlite3 session, a backup) holds the write lock.
  const db = openDatabaseFile(server)
  db.exec('BEGIN IMMEDIATE')
  held.release()
  // Activation waits out busy_timeout and fails; the rule must go before anything else.
  const first = await Promise.race([
    fake.waitFor((r) => r.method === 'DELETE').then(() => 'rule_deleted'),
    pending.then(() => 'answered'),
  ])
  db.exec('ROLLBACK')
  db.close()

  const failed = await pending
  expect(first).toBe('rule_deleted')
  // A lock held past the busy timeout is a temporary storage state: 503 with a retry hint.
  expect(failed.status).toBe(503)
  expect(failed.body.error.code).toBe('storage_unavailable')
  expect(failed.headers.get('retry-after')).toBe('5')
  expect(fake.rules.size).toBe(0)
  expect(inboxRows(server)).toEqual([])
  expect((await server.get('/v1/usage', tenant.key)).body.inboxes.active).toBe(0)
  // The address is free again.
  expect((await server.post('/v1/inboxes', tenant.key, { prefix: 'locked-box' })).status).toBe(201)
})
