/** GET /ready: database writable, SMTP listening, Litestream running when a replica is configured. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parentCommand, readinessChecks, WriteProbe } from '../../src/http/routes/ready.ts'
import { startTestServer, type TestServer } from '../support/harness.ts'

let server: TestServer
beforeAll(async () => {
  server = await startTestServer()
})
afterAll(() => server.stop())

describe('GET /ready', () => {
  test('ready: 200 with each check named; no key needed', async () => {
    const response = await server.get('/ready')
    expect(response.status).toBe(200)
    expect(response.body).toEqual({
      status: 'ready',
      checks: {
        database: 'ok',
        smtp: 'ok',
        litestream: 'not_configured',
        replication: 'not_configured',
        proxy_lines: 'not_configured',
      },
    })
  })

  test('a database that refuses writes makes it 503 while /health (liveness) stays 200', async () => {
    const { sqlite } = server.app.storage!
    const { key } = await server.tenant()
    sqlite.exec('PRAGMA query_only = 1')
    try {
      // The heartbeat write is rate-limited (the first test's success is reused for 5 s), but
      // a write that fails anywhere makes the next check write again.
      expect((await server.post('/v1/inboxes', key)).status).toBe(503)
      const response = await server.get('/ready')
      expect(response.status).toBe(503)
      expect(response.body.checks.database).toBe('failed')
      expect((await server.get('/health')).status).toBe(200)
    } finally {
      sqlite.exec('PRAGMA query_only = 0')
    }
    expect((await server.get('/ready')).status).toBe(200)
  })

  test('another process holding the write lock is not a failure, and the probe does not wait for it', async () => {
    const other = new Database(server.databasePath)
    other.exec('BEGIN IMMEDIATE')
    try {
      const started = performance.now()
      const response = await server.get('/ready')
      expect(response.body.checks.database).toBe('ok')
      expect(performance.now() - started).toBeLessThan(2_000) // the busy timeout is 5 s
      // A probe that writes now (the route's may reuse a success of the last 5 s) meets the lock too.
      expect(
        (await readinessChecks(server.app.services, { smtpListening: () => true }, () => null, new WriteProbe()))
          .database,
      ).toBe('ok')
      expect(server.logs.filter((line) => line.event === 'storage_failing' && line.kind === 'busy')).toEqual([]) // busy is writable
    } finally {
      other.exec('ROLLBACK')
      other.close()
    }
  })

  test('a lock held past the busy timeout, so that writes fail, makes it 503 until a write commits again', async () => {
    const { sqlite } = server.app.storage!
    const { key } = await server.tenant()
    const other = new Database(server.databasePath)
    // The server waits 5 s for a lock; a shorter wait keeps the test fast and changes nothing else.
    sqlite.exec('PRAGMA busy_timeout = 200')
    other.exec('BEGIN IMMEDIATE')
    try {
      const created = await server.post('/v1/inboxes', key)
      expect(created.status).toBe(503)
      expect(created.body.error.code).toBe('storage_unavailable')
      // The lock is still held: the next commit would fail the same way, so this is not "ready".
      const response = await server.get('/ready')
      expect(response.status).toBe(503)
      expect(response.body.checks.database).toBe('failed')
    } finally {
      other.exec('ROLLBACK')
      other.close()
      sqlite.exec('PRAGMA busy_timeout = 5000')
    }
    const recovered = await server.get('/ready')
    expect(recovered.status).toBe(200)
    expect(recovered.body.checks.database).toBe('ok')
  })
})

test('a configured replica without Litestream as the parent process is not ready', async () => {
  const replica = mkdtempSync(join(tmpdir(), 'pigeonhole-replica-'))
  const unreplicated = await startTestServer({ env: { LITESTREAM_REPLICA: 'file', LITESTREAM_REPLICA_PATH: replica } })
  try {
    const response = await unreplicated.get('/ready')
    expect(response.status).toBe(503)
    expect(response.body.checks).toEqual({
      database: 'ok',
      smtp: 'ok',
      litestream: 'failed',
      replication: 'ok',
      proxy_lines: 'not_configured',
    })
    const services = unreplicated.app.services
    expect((await readinessChecks(services, { smtpListening: () => true }, () => 'litestream')).litestream).toBe('ok')
    expect((await readinessChecks(services, { smtpListening: () => false }, () => 'litestream')).smtp).toBe('failed')
  } finally {
    await unreplicated.stop()
    rmSync(replica, { recursive: true, force: true })
  }
})

test('the parent command is read from /proc/<ppid>/comm', () => {
  const proc = mkdtempSync(join(tmpdir(), 'pigeonhole-proc-'))
  mkdirSync(join(proc, '4242'))
  writeFileSync(join(proc, '4242', 'comm'), 'litestream\n')
  expect(parentCommand(proc, 4242)).toBe('litestream')
  expect(parentCommand(proc, 4243)).toBeNull()
  rmSync(proc, { recursive: true, force: true })
})
