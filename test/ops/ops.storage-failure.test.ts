/**
 * Storage that refuses writes is a temporary state: the API answers 503 `storage_unavailable`
 * with the error envelope and Retry-After where the interface lists a 503 for the operation
 * (createInbox, deleteInbox), elsewhere the 500 `internal_error` every operation may answer,
 * with the same Retry-After; SMTP answers 451, /ready fails, reads
 * go on, the log has one line when it begins and one when it ends (with the count refused)
 * and no stack trace, and nothing acknowledged is lost.
 *
 * The refusal comes from SQLite itself (`PRAGMA query_only`, SQLITE_READONLY: the same result
 * code a write to a read-only file gets). Remounting a real volume read-only under the
 * server is not possible here: Linux refuses `mount -o remount,ro` with EBUSY while a process
 * holds a file on it open for writing, which the server always does.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startRetentionSweeper } from '../../src/core/runtime/retention.ts'
import { startTestServer, type Tenant, type TestServer } from '../support/harness.ts'
import { sendMail, simpleMessage } from '../support/smtp.ts'
import { until } from '../support/wait.ts'

let server: TestServer
let tenant: Tenant
beforeAll(async () => {
  server = await startTestServer()
  tenant = await server.tenant()
})
afterAll(() => server.stop())

const send = (address: string, subject: string) =>
  sendMail(server.app.smtpPort, { to: [address] }, simpleMessage({ to: address, subject }))
const failures = (kind: string) =>
  Number(
    new RegExp(`^pigeonhole_storage_failures_total\\{kind="${kind}"\\} (\\d+)$`, 'm').exec(
      server.app.metrics.render(),
    )?.[1],
  )

test('a read-only database: 503 storage_unavailable, SMTP 451, /ready 503, one line each way, nothing lost', async () => {
  const inbox = (await server.post('/v1/inboxes', tenant.key)).body.data
  expect((await send(inbox.address, 'before')).data?.code).toBe(250)
  const { sqlite } = server.app.storage!
  const logsBefore = server.logs.length

  sqlite.exec('PRAGMA query_only = 1')
  try {
    for (const subject of ['refused-1', 'refused-2', 'refused-3']) {
      const result = await send(inbox.address, subject)
      expect(result.data).toEqual({ code: 451, text: 'Temporary failure storing the message, try again later' })
    }
    const created = await server.post('/v1/inboxes', tenant.key)
    expect(created.status).toBe(503)
    expect(created.headers.get('retry-after')).toBe('5')
    expect(created.body.error).toEqual({
      code: 'storage_unavailable',
      message: expect.any(String),
      request_id: created.headers.get('x-request-id'),
    })
    const ready = await server.get('/ready')
    expect(ready.status).toBe(503)
    expect(ready.body.checks.database).toBe('failed')
    // deleteMessage lists no 503 in the interface: its 500, with the retry hint, and nothing deleted.
    const message = (await server.get(`/v1/inboxes/${inbox.id}/messages`, tenant.key)).body.data[0]
    const deleted = await server.delete(`/v1/messages/${message.id}`, tenant.key)
    expect(deleted.status).toBe(500)
    expect(deleted.headers.get('retry-after')).toBe('5')
    expect(deleted.body.error).toEqual({
      code: 'internal_error',
      message: expect.any(String),
      request_id: deleted.headers.get('x-request-id'),
    })
    // Reads go on, and show what was acknowledged.
    const listed = await server.get(`/v1/inboxes/${inbox.id}/messages`, tenant.key)
    expect(listed.status).toBe(200)
    expect(listed.body.data.map((m: { subject: string }) => m.subject)).toEqual(['before'])
    expect(failures('read_only')).toBe(6) // three messages, one createInbox, one deleteMessage, one readiness write
  } finally {
    sqlite.exec('PRAGMA query_only = 0')
  }

  expect((await server.get('/ready')).status).toBe(200)
  expect((await send(inbox.address, 'after')).data?.code).toBe(250)
  const lines = server.logs.slice(logsBefore)
  expect(lines.filter((line) => line.event === 'storage_failing')).toEqual([
    expect.objectContaining({ level: 'warn', kind: 'read_only', sqlite_code: 'SQLITE_READONLY' }),
  ])
  expect(lines.filter((line) => line.event === 'storage_recovered')).toEqual([
    expect.objectContaining({ level: 'warn', kind: 'read_only', refused: 6 }),
  ])
  expect(lines.filter((line) => line.level === 'error')).toEqual([])
  expect(lines.filter((line) => 'stack' in line)).toEqual([])
  expect(lines.filter((line) => line.event === 'smtp_refused' && line.reason === 'storage_failed')).toHaveLength(3)
  const subjects = (await server.get(`/v1/inboxes/${inbox.id}/messages`, tenant.key)).body.data.map(
    (m: { subject: string }) => m.subject,
  )
  expect(subjects.sort()).toEqual(['after', 'before'])
})

test('a constraint error is not a storage failure: it stays an internal error and begins no failing state', async () => {
  const { storageHealth } = server.app.services
  const bug = Object.assign(new Error('constraint'), { code: 'SQLITE_CONSTRAINT_UNIQUE' })
  expect(storageHealth.failed(bug)).toBeNull()
  expect(storageHealth.failing).toBeNull()
})

test('the retention sweeper on a read-only database logs no error with a stack per sweep', async () => {
  const { sqlite } = server.app.storage!
  const logsBefore = server.logs.length
  const stop = startRetentionSweeper(server.app.services, 20)
  sqlite.exec('PRAGMA query_only = 1')
  try {
    const failing = () => server.logs.slice(logsBefore).some((line) => line.event === 'storage_failing')
    await until(failing, 'the first sweep to meet the read-only database')
    // Proves nothing happens: the next sweeps meet it too and log no error, stack or second warning.
    await Bun.sleep(150)
  } finally {
    sqlite.exec('PRAGMA query_only = 0')
    stop()
  }
  const lines = server.logs.slice(logsBefore)
  expect(lines.filter((line) => line.event === 'storage_failing')).toHaveLength(1)
  expect(lines.filter((line) => line.level === 'error')).toEqual([])
  expect(lines.filter((line) => 'stack' in line)).toEqual([])
  expect((await server.post('/v1/inboxes', tenant.key)).status).toBe(201) // and it ends with the next commit
})
