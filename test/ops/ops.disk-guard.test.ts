/**
 * The free-space guard against SQLite's own ceiling (PRAGMA max_page_count on the server's
 * connection): mail is refused with 452 before the file is full, nothing acknowledged is
 * lost, createInbox answers 503, reads and deletes work, and deleting brings the service
 * back by itself. Bytes waiting in the DATA spool count as used while they wait.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { parseMinFree } from '../../src/core/runtime/disk-guard.ts'
import { errorCode, startTestServer, type Tenant, type TestServer } from '../support/harness.ts'
import { SmtpClient, sendMail, simpleMessage } from '../support/smtp.ts'
import { until } from '../support/wait.ts'

const THRESHOLD = 512 * 1024
let server: TestServer
let tenant: Tenant

beforeAll(async () => {
  server = await startTestServer({
    env: {
      METRICS_TOKEN: 'disk-guard-metrics-token',
      DISK_MIN_FREE: '512KiB',
      LIMIT_MONTHLY_EMAILS: '10000',
      LIMIT_INBOX_BURST: '10000',
      LIMIT_ORG_BURST: '10000',
    },
  })
  tenant = await server.tenant()
})
afterAll(() => server.stop())

const pragma = (name: string) =>
  Object.values(server.app.storage!.sqlite.query(`PRAGMA ${name}`).get() as Record<string, number>)[0]!
const createInbox = () => server.post('/v1/inboxes', tenant.key)
const body = (n: number) => `message ${n}\r\n` + 'abcdefghij'.repeat(6_000) // about 60 KB

describe('DISK_MIN_FREE against max_page_count', () => {
  test('452 before the database is full, 503 for createInbox, reads and deletes work, then recovery', async () => {
    const disk = server.app.services.disk
    const first = (await createInbox()).body.data
    // Room for about twelve more 60 KB messages above the threshold.
    const pageSize = pragma('page_size')
    server.app.storage!.sqlite.exec(
      `PRAGMA max_page_count = ${pragma('page_count') + Math.ceil((THRESHOLD + 720 * 1024) / pageSize)}`,
    )
    expect(disk.refresh().tripped).toBe(false)

    const acknowledged: string[] = []
    let refusal: { code: number; text: string } | undefined
    for (let n = 0; n < 60 && !refusal; n++) {
      const result = await sendMail(
        server.app.smtpPort,
        { to: [first.address] },
        simpleMessage({ to: first.address, subject: `m${n}`, text: body(n) }),
      )
      if (result.rcpt[0]!.code !== 250) refusal = result.rcpt[0]
      else {
        expect(result.data!.code).toBe(250)
        acknowledged.push(`m${n}`)
      }
      disk.refresh() // the guard's one-second cache, skipped so the test does not wait for it
    }
    expect(refusal).toEqual({ code: 452, text: '4.3.1 Insufficient system storage' })
    expect(acknowledged.length).toBeGreaterThan(5)
    expect(server.logs.filter((line) => line.event === 'disk_guard_tripped')).toHaveLength(1)
    const metrics = await (
      await fetch(`${server.url}/metrics`, { headers: { authorization: 'Bearer disk-guard-metrics-token' } })
    ).text()
    expect(metrics).toContain('\npigeonhole_disk_guard_tripped 1\n')
    expect(metrics).toContain(`\npigeonhole_disk_free_threshold_bytes ${THRESHOLD}\n`)
    expect(metrics).toContain('\npigeonhole_messages_refused_total{reason="insufficient_storage"} 1\n')

    // Nothing acknowledged is lost, and reads work.
    const listed = await server.get(`/v1/inboxes/${first.id}/messages?limit=100`, tenant.key)
    expect(listed.status).toBe(200)
    expect(listed.body.data.map((m: { subject: string }) => m.subject).sort()).toEqual([...acknowledged].sort())

    // A new inbox waits for space; the error envelope names the reason.
    const refused = await createInbox()
    expect(refused.status).toBe(503)
    expect(errorCode(refused)).toBe('insufficient_storage')
    expect(refused.headers.get('retry-after')).toBe('60')

    // Refusals while tripped write no more warning lines and no errors.
    for (let n = 0; n < 5; n++)
      expect(
        (await sendMail(server.app.smtpPort, { to: [first.address] }, simpleMessage({ to: first.address }))).rcpt[0]!
          .code,
      ).toBe(452)
    expect(server.logs.filter((line) => line.level === 'error')).toEqual([])
    expect(server.logs.filter((line) => line.event === 'disk_guard_tripped')).toHaveLength(1)

    // Deleting the inbox frees its pages; the guard clears by itself on its next check.
    expect((await server.delete(`/v1/inboxes/${first.id}`, tenant.key)).status).toBe(204)
    expect(disk.refresh().tripped).toBe(false)
    expect(server.logs.filter((line) => line.event === 'disk_guard_cleared')).toHaveLength(1)
    const second = await createInbox()
    expect(second.status).toBe(201)
    const delivered = await sendMail(
      server.app.smtpPort,
      { to: [second.body.data.address] },
      simpleMessage({ to: second.body.data.address }),
    )
    expect(delivered.data?.code).toBe(250)
  })
})

test('DISK_MIN_FREE accepts bytes, units and percentages', () => {
  expect(parseMinFree('0')).toEqual({ bytes: 0 })
  expect(parseMinFree('64MiB')).toEqual({ bytes: 64 * 1024 * 1024 })
  expect(parseMinFree('5%')).toEqual({ percent: 5 })
  expect(parseMinFree('2.5%')).toEqual({ percent: 2.5 })
  expect(parseMinFree('64MB')).toBeNull()
  expect(parseMinFree('100%')).toBeNull()
})

describe('DISK_MIN_FREE and the DATA spool', () => {
  test('bytes waiting in the spool count as used: the guard trips while they wait and clears once they are gone', async () => {
    const own = await startTestServer({
      env: {
        DISK_MIN_FREE: '512KiB',
        LIMIT_MONTHLY_EMAILS: '10000',
        LIMIT_INBOX_BURST: '10000',
        LIMIT_ORG_BURST: '10000',
      },
    })
    try {
      const ownTenant = await own.tenant()
      const inbox = (await own.post('/v1/inboxes', ownTenant.key)).body.data
      const sqlite = own.app.storage!.sqlite
      const ownPragma = (name: string) =>
        Object.values(sqlite.query(`PRAGMA ${name}`).get() as Record<string, number>)[0]!
      // 2 MiB of room above the threshold, as SQLite sees it.
      sqlite.exec(
        `PRAGMA max_page_count = ${ownPragma('page_count') + Math.ceil((THRESHOLD + 2 * 1024 * 1024) / ownPragma('page_size'))}`,
      )
      const disk = own.app.services.disk
      expect(disk.refresh().tripped).toBe(false)

      // 2.5 MiB mid-DATA, so in the spool: more than the room left.
      const big = await SmtpClient.connect(own.app.smtpPort)
      await big.command('EHLO spool.test')
      await big.command('MAIL FROM:<big@example.com>')
      expect((await big.command(`RCPT TO:<${inbox.address}>`)).code).toBe(250)
      expect((await big.command('DATA')).code).toBe(354)
      big.writeBody(simpleMessage({ to: inbox.address, subject: 'big', text: `${'x'.repeat(998)}\r\n`.repeat(2600) }))
      await until(() => own.app.services.spool.bytes >= 2.4 * 1024 * 1024, 'the big message to be spooled')
      expect(disk.refresh().tripped).toBe(true)
      const refused = await sendMail(
        own.app.smtpPort,
        { to: [inbox.address] },
        simpleMessage({ to: inbox.address, subject: 'while spooled', text: 'small' }),
      )
      expect(refused.rcpt[0]).toEqual({ code: 452, text: '4.3.1 Insufficient system storage' })

      // The sender gives up: its spool file goes, and so does the guard.
      big.destroy()
      await until(() => own.app.services.spool.bytes === 0, 'the abandoned spool file to go')
      expect(disk.refresh().tripped).toBe(false)
    } finally {
      await own.stop()
    }
  })
})
