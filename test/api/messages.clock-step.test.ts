/**
 * received_at never runs backwards inside an inbox: after the wall clock steps back an hour
 * (the injected clock here), a new message still sorts newest, `limit=1` shows it, and the
 * "wait for the next message" pattern (received_after = previous + 1 ms) wakes for it. Two
 * messages in the same millisecond get distinct, increasing times for the same reason.
 * Other inboxes keep the clock's time.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { ManualClock } from '../../src/clock.ts'
import type { TestServer, Tenant } from '../support/harness.ts'
import { deliver, newInbox, startRoomyServer } from '../support/messages.ts'
import { until } from '../support/wait.ts'
import { simpleMessage } from '../support/smtp.ts'

const clock = new ManualClock('2026-03-10T12:00:00.000Z')
let server: TestServer
let tenant: Tenant

beforeAll(async () => {
  server = await startRoomyServer({ clock })
  tenant = await server.tenant()
})
afterAll(() => server.stop())

const HOUR = 3_600_000
const iso = (ms: number) => new Date(ms).toISOString()
const newest = async (inboxId: string) =>
  (await server.get(`/v1/inboxes/${inboxId}/messages?limit=1`, tenant.key)).body.data[0]

test('after the clock steps back an hour, the next message is still the newest and wakes a received_after wait', async () => {
  const inbox = await newInbox(server, tenant.key)
  await deliver(server, inbox.address, simpleMessage({ to: inbox.address, subject: 'before the step' }))
  const first = await newest(inbox.id)
  expect(first.received_at).toBe('2026-03-10T12:00:00.000Z')

  clock.advance(-HOUR)
  // The README's pattern: wait for anything at or after the previous message + 1 ms.
  const after = iso(Date.parse(first.received_at) + 1)
  const wait = server.get(
    `/v1/inboxes/${inbox.id}/messages?wait_seconds=10&limit=1&received_after=${encodeURIComponent(after)}`,
    tenant.key,
  )
  await until(() => server.sum((services) => services.notifier.listenerCount(inbox.id)) === 1, 'the wait to subscribe')
  await deliver(server, inbox.address, simpleMessage({ to: inbox.address, subject: 'after the step' }))

  const woke = await wait
  expect(woke.status).toBe(200)
  expect(woke.body.data[0].subject).toBe('after the step')
  const second = await newest(inbox.id)
  expect(second.subject).toBe('after the step')
  expect(second.received_at).toBe('2026-03-10T12:00:00.001Z')
  expect(Date.parse(second.expires_at) - Date.parse(second.received_at)).toBe(30 * 24 * HOUR)

  // An inbox with no newer mail takes the clock's (stepped) time.
  const other = await newInbox(server, tenant.key)
  await deliver(server, other.address, simpleMessage({ to: other.address, subject: 'elsewhere' }))
  expect((await newest(other.id)).received_at).toBe('2026-03-10T11:00:00.000Z')
  clock.advance(HOUR)
})

test('two messages in the same millisecond get increasing received_at, so the next one is never skipped', async () => {
  const inbox = await newInbox(server, tenant.key)
  await deliver(server, inbox.address, simpleMessage({ to: inbox.address, subject: 'one' }))
  const first = await newest(inbox.id)
  await deliver(server, inbox.address, simpleMessage({ to: inbox.address, subject: 'two' }))
  const second = await newest(inbox.id)
  expect(second.subject).toBe('two')
  expect(Date.parse(second.received_at)).toBe(Date.parse(first.received_at) + 1)
  const next = await server.get(
    `/v1/inboxes/${inbox.id}/messages?received_after=${encodeURIComponent(iso(Date.parse(first.received_at) + 1))}`,
    tenant.key,
  )
  expect(next.body.data.map((message: { subject: string }) => message.subject)).toEqual(['two'])
})
