/**
 * Retention with a ManualClock: a message is visible until expires_at (received_at + 30
 * days) and invisible from that instant; sweepOnce deletes expired messages with their
 * bytes, in batches, and expired idempotency records; usage is never reduced.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ManualClock, isoTime } from '../../src/clock.ts'
import { sweepOnce } from '../../src/core/runtime/retention.ts'
import { errorCode, type TestServer, type Tenant } from '../support/harness.ts'
import { simpleMessage } from '../support/smtp.ts'
import { deliver, newInbox, startRoomyServer } from '../support/messages.ts'
import { richMessage } from '../support/fixture-mail.ts'

// 30 days after the first of January is still January, so usage is read in one month.
const T0 = Date.parse('2026-01-01T00:00:00.000Z')
const DAY = 86_400_000
const clock = new ManualClock(T0)
let server: TestServer
let tenant: Tenant

beforeAll(async () => {
  server = await startRoomyServer({ clock })
  tenant = await server.tenant()
})
afterAll(() => server.stop())

const rows = (sql: string, ...params: string[]) => server.countRows(sql, ...params)
const received = async () => (await server.get('/v1/usage', tenant.key)).body.emails.received

describe('retention', () => {
  test('visible until expires_at, invisible from it; the sweep then deletes it with its bytes; usage stays', async () => {
    clock.set(T0)
    const inbox = await newInbox(server, tenant.key)
    const [id] = await deliver(server, inbox.address, richMessage(inbox.address))
    const message = (await server.get(`/v1/messages/${id}`, tenant.key)).body.data
    expect(message.received_at).toBe(isoTime(T0))
    expect(message.expires_at).toBe(isoTime(T0 + 30 * DAY))
    const attachmentId: string = message.attachments[0].id
    const visible = async () => ({
      get: (await server.get(`/v1/messages/${id}`, tenant.key)).status,
      list: (await server.get(`/v1/inboxes/${inbox.id}/messages`, tenant.key)).body.data.length,
      download: (
        await fetch(`${server.url}/v1/attachments/${attachmentId}`, {
          headers: { authorization: `Bearer ${tenant.key}` },
        })
      ).status,
    })
    expect(await received()).toBe(1)

    clock.set(T0 + 30 * DAY - 1)
    expect(await visible()).toEqual({ get: 200, list: 1, download: 200 })
    // Nothing has expired yet: the sweep leaves it.
    expect((await sweepOnce(server.app.services)).messages).toBe(0)

    clock.set(T0 + 30 * DAY)
    expect(await visible()).toEqual({ get: 404, list: 0, download: 404 })
    expect(errorCode(await server.get(`/v1/messages/${id}`, tenant.key))).toBe('message_not_found')
    // Invisible but not yet swept: the bytes are still in the file until the sweeper runs.
    expect(await rows('SELECT count(*) AS n FROM message_sources WHERE message_id = ?', id!)).toBe(1)

    expect((await sweepOnce(server.app.services)).messages).toBe(1)
    expect(await rows('SELECT count(*) AS n FROM messages WHERE id = ?', id!)).toBe(0)
    expect(await rows('SELECT count(*) AS n FROM message_sources WHERE message_id = ?', id!)).toBe(0)
    expect(await rows('SELECT count(*) AS n FROM attachments WHERE message_id = ?', id!)).toBe(0)
    expect(await rows('SELECT count(*) AS n FROM attachment_contents WHERE attachment_id = ?', attachmentId)).toBe(0)
    expect(await received()).toBe(1)
    // The inbox itself is not subject to retention.
    expect((await server.get(`/v1/inboxes/${inbox.id}`, tenant.key)).status).toBe(200)
  })

  test('a sweep deletes more than one batch of expired messages and keeps the unexpired ones', async () => {
    clock.set(T0 + DAY)
    // 11 inboxes × 20 messages: one SMTP transaction stores one copy per recipient.
    const inboxes = await Promise.all(Array.from({ length: 11 }, () => newInbox(server, tenant.key)))
    const before = await received()
    const sent = await Promise.all(
      Array.from({ length: 20 }, () =>
        deliver(
          server,
          inboxes.map((b) => b.address),
          simpleMessage({ to: inboxes[0]!.address }),
        ),
      ),
    )
    expect(sent.flat()).toHaveLength(220)
    clock.set(T0 + 2 * DAY)
    const [fresh] = await deliver(server, inboxes[0]!.address, richMessage(inboxes[0]!.address))
    expect(await received()).toBe(before + 221)

    // Every message of the loop expired; `fresh` did not. (Messages reaching one inbox in the
    // same millisecond are stored 1 ms apart, so the loop's last ones expire 19 ms after 30 days.)
    clock.set(T0 + 31 * DAY + 1000)
    const swept = await sweepOnce(server.app.services)
    expect(swept.messages).toBe(220)
    expect(await rows('SELECT count(*) AS n FROM messages')).toBe(1)
    expect(await rows('SELECT count(*) AS n FROM message_sources')).toBe(1)
    expect(await rows('SELECT count(*) AS n FROM attachment_contents')).toBe(2) // `fresh` has two
    expect((await server.get(`/v1/messages/${fresh}`, tenant.key)).status).toBe(200)
    clock.set(T0 + 2 * DAY) // usage is per month: read January's again
    expect(await received()).toBe(before + 221)
  })

  test('deleting a message does not give the email back', async () => {
    clock.set(T0 + 3 * DAY)
    const inbox = await newInbox(server, tenant.key)
    const before = await received()
    const [id] = await deliver(server, inbox.address, richMessage(inbox.address))
    expect(await received()).toBe(before + 1)
    expect((await server.delete(`/v1/messages/${id}`, tenant.key)).status).toBe(204)
    expect(await received()).toBe(before + 1)
  })
})

describe('idempotency records', () => {
  test('expire after 24 hours and are swept then, not before', async () => {
    clock.set(T0 + 5 * DAY)
    const created = await server.post(
      '/v1/inboxes',
      tenant.key,
      { prefix: 'sweep-me' },
      { 'idempotency-key': 'retention-key-1' },
    )
    expect(created.status).toBe(201)
    const records = () =>
      rows('SELECT count(*) AS n FROM idempotency_records WHERE organization_id = ?', tenant.organizationId)
    expect(await records()).toBe(1)

    clock.set(T0 + 6 * DAY - 1)
    expect((await sweepOnce(server.app.services)).idempotencyRecords).toBe(0)
    expect(await records()).toBe(1)
    // Still remembered: the same request replays the same inbox.
    const replay = await server.post(
      '/v1/inboxes',
      tenant.key,
      { prefix: 'sweep-me' },
      { 'idempotency-key': 'retention-key-1' },
    )
    expect(replay.body.data.id).toBe(created.body.data.id)

    clock.set(T0 + 6 * DAY)
    expect((await sweepOnce(server.app.services)).idempotencyRecords).toBe(1)
    expect(await records()).toBe(0)
  })
})
