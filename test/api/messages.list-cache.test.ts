/**
 * Repeated listings are answered from serialized pages (src/core/messages/page-cache.ts);
 * every change that could alter a page must show at once, as if nothing were cached.
 */
import { afterEach, beforeEach, expect, test } from 'bun:test'
import { ManualClock } from '../../src/clock.ts'
import { sweepOnce } from '../../src/core/runtime/retention.ts'
import { errorCode, type TestServer, type Tenant } from '../support/harness.ts'
import { simpleMessage } from '../support/smtp.ts'
import { deliver, newInbox, startRoomyServer } from '../support/messages.ts'
import { until } from '../support/wait.ts'

const DAY = 86_400_000
let server: TestServer
let tenant: Tenant
let clock: ManualClock

beforeEach(async () => {
  clock = new ManualClock('2026-05-10T12:00:00.000Z')
  server = await startRoomyServer({ clock })
  tenant = await server.tenant()
})
afterEach(() => server.stop())

const list = async (inboxId: string, query = '') => {
  const response = await server.get(`/v1/inboxes/${inboxId}/messages${query}`, tenant.key)
  expect(response.status).toBe(200)
  return response.body as { data: Array<{ id: string; subject: string }>; next_cursor: string | null }
}
const subjects = async (inboxId: string, query = '') => (await list(inboxId, query)).data.map((m) => m.subject)

test('a message stored after a listing appears in the very next listing', async () => {
  const inbox = await newInbox(server, tenant.key)
  expect(await subjects(inbox.id)).toEqual([])
  expect(await subjects(inbox.id)).toEqual([]) // now cached
  await deliver(server, inbox.address, simpleMessage({ to: inbox.address, subject: 'first' }))
  expect(await subjects(inbox.id)).toEqual(['first'])
  clock.advance(1)
  await deliver(server, inbox.address, simpleMessage({ to: inbox.address, subject: 'second' }))
  expect(await subjects(inbox.id)).toEqual(['second', 'first'])
})

test('a deleted message disappears from a cached listing', async () => {
  const inbox = await newInbox(server, tenant.key)
  const [id] = await deliver(server, inbox.address, simpleMessage({ to: inbox.address, subject: 'doomed' }))
  expect(await subjects(inbox.id)).toEqual(['doomed'])
  expect((await server.delete(`/v1/messages/${id}`, tenant.key)).status).toBe(204)
  expect(await subjects(inbox.id)).toEqual([])
})

test('a message vanishes from a cached listing the moment it expires, and the sweeper changes nothing visible', async () => {
  const inbox = await newInbox(server, tenant.key)
  await deliver(server, inbox.address, simpleMessage({ to: inbox.address, subject: 'short-lived' }))
  expect(await subjects(inbox.id)).toEqual(['short-lived'])
  clock.advance(30 * DAY - 1)
  expect(await subjects(inbox.id)).toEqual(['short-lived'])
  clock.advance(1)
  expect(await subjects(inbox.id)).toEqual([])
  await sweepOnce(server.app.services)
  expect(await subjects(inbox.id)).toEqual([])
})

test('a clock moved back rebuilds the page instead of serving one built later', async () => {
  const inbox = await newInbox(server, tenant.key)
  await deliver(server, inbox.address, simpleMessage({ to: inbox.address, subject: 'timeless' }))
  clock.advance(31 * DAY)
  expect(await subjects(inbox.id)).toEqual([])
  clock.advance(-30 * DAY)
  expect(await subjects(inbox.id)).toEqual(['timeless'])
})

test('filters and cursors are part of the key', async () => {
  const inbox = await newInbox(server, tenant.key)
  for (const subject of ['alpha', 'beta', 'gamma']) {
    await deliver(server, inbox.address, simpleMessage({ to: inbox.address, subject }))
    clock.advance(1)
  }
  expect(await subjects(inbox.id, '?subject=ALPHA')).toEqual(['alpha'])
  expect(await subjects(inbox.id, '?subject=beta')).toEqual(['beta'])
  const first = await list(inbox.id, '?limit=1')
  expect(first.data.map((m) => m.subject)).toEqual(['gamma'])
  expect(await subjects(inbox.id, `?limit=1&cursor=${first.next_cursor}`)).toEqual(['beta'])
  expect(await subjects(inbox.id, '?limit=2')).toEqual(['gamma', 'beta'])
})

test('a cached page is never served for a deleted inbox, another organisation or a bad cursor', async () => {
  const inbox = await newInbox(server, tenant.key)
  await deliver(server, inbox.address, simpleMessage({ to: inbox.address, subject: 'private' }))
  const page = await list(inbox.id, '?limit=1')
  expect(page.data).toHaveLength(1)
  const stranger = await server.tenant('stranger')
  const foreign = await server.get(`/v1/inboxes/${inbox.id}/messages`, stranger.key)
  expect([foreign.status, errorCode(foreign)]).toEqual([404, 'inbox_not_found'])
  const tampered = await server.get(
    `/v1/inboxes/${inbox.id}/messages?limit=1&cursor=${'x'}${page.next_cursor ?? 'abc.def'}`,
    tenant.key,
  )
  expect([tampered.status, errorCode(tampered)]).toEqual([422, 'invalid_cursor'])
  expect((await server.delete(`/v1/inboxes/${inbox.id}`, tenant.key)).status).toBe(204)
  const gone = await server.get(`/v1/inboxes/${inbox.id}/messages`, tenant.key)
  expect([gone.status, errorCode(gone)]).toEqual([404, 'inbox_not_found'])
})

test('cached answers carry their own request id and the JSON content type', async () => {
  const inbox = await newInbox(server, tenant.key)
  const [a, b] = [
    await server.get(`/v1/inboxes/${inbox.id}/messages`, tenant.key),
    await server.get(`/v1/inboxes/${inbox.id}/messages`, tenant.key),
  ]
  expect(a.text).toBe(b.text)
  expect(a.headers.get('x-request-id')).not.toBe(b.headers.get('x-request-id'))
  expect(b.headers.get('content-type')).toContain('application/json')
})

test('next_cursor turns null as soon as the only older message expires', async () => {
  const inbox = await newInbox(server, tenant.key)
  await deliver(server, inbox.address, simpleMessage({ to: inbox.address, subject: 'older' }))
  clock.advance(60_000)
  await deliver(server, inbox.address, simpleMessage({ to: inbox.address, subject: 'newer' }))
  const before = await list(inbox.id, '?limit=1')
  expect(before.data.map((m) => m.subject)).toEqual(['newer'])
  expect(before.next_cursor).not.toBeNull()
  clock.advance(30 * DAY - 60_000) // the older message's expires_at
  const after = await list(inbox.id, '?limit=1')
  expect(after.data.map((m) => m.subject)).toEqual(['newer'])
  expect(after.next_cursor).toBeNull()
})

test('a query value containing a newline cannot make another query hit its cached page', async () => {
  const inbox = await newInbox(server, tenant.key)
  expect((await server.get(`/v1/inboxes/${inbox.id}/messages?subject=x%0Ay`, tenant.key)).status).toBe(200)
  const crafted = await server.get(`/v1/inboxes/${inbox.id}/messages?cursor=%0Ax&subject=y`, tenant.key)
  expect([crafted.status, errorCode(crafted)]).toEqual([422, 'invalid_cursor'])
})

test('a waiting request with a bad cursor answers 422 even when every long-poll slot is taken', async () => {
  const inbox = await newInbox(server, tenant.key)
  const controllers = Array.from({ length: 10 }, () => new AbortController())
  const polls = controllers.map((c) =>
    fetch(`${server.url}/v1/inboxes/${inbox.id}/messages?wait_seconds=30`, {
      headers: { authorization: `Bearer ${tenant.key}` },
      signal: c.signal,
    }).catch(() => undefined),
  )
  const principal = { organizationId: tenant.organizationId, keyPublicId: tenant.key.slice(8, 24) }
  // Slots held on every machine behind the URL (two when the suite runs on a pair).
  const held = () => server.sum((services) => services.longPolls.count(principal).key)
  await until(() => held() === 10, '10 polls to hold slots')
  expect(held()).toBe(10)
  const full = await server.get(`/v1/inboxes/${inbox.id}/messages?wait_seconds=30`, tenant.key)
  expect([full.status, errorCode(full)]).toEqual([429, 'long_poll_limit_exceeded'])
  const bad = await server.get(`/v1/inboxes/${inbox.id}/messages?wait_seconds=30&cursor=not-ours`, tenant.key)
  expect([bad.status, errorCode(bad)]).toEqual([422, 'invalid_cursor'])
  for (const c of controllers) c.abort()
  await Promise.all(polls)
})
