/**
 * listOrWaitForMessages: each invalid query value answers 422 with its own code and is
 * never clamped; unknown, deleted and foreign inboxes answer 404 inbox_not_found, also
 * when the request would wait.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { errorCode, type TestServer, type Tenant } from '../support/harness.ts'
import { simpleMessage } from '../support/smtp.ts'
import { deliver, newInbox, startRoomyServer } from '../support/messages.ts'

let server: TestServer
let tenant: Tenant
let inboxId: string
let otherInboxId: string
let foreignTenant: Tenant
let foreignInboxId: string

beforeAll(async () => {
  server = await startRoomyServer()
  tenant = await server.tenant('org-a')
  foreignTenant = await server.tenant('org-b')
  const inbox = await newInbox(server, tenant.key)
  inboxId = inbox.id
  otherInboxId = (await newInbox(server, tenant.key)).id
  foreignInboxId = (await newInbox(server, foreignTenant.key)).id
  // Three messages in every inbox, so each listing has a second page at limit=1.
  for (const id of [inboxId, otherInboxId, foreignInboxId]) {
    const address = (await server.get(`/v1/inboxes/${id}`, id === foreignInboxId ? foreignTenant.key : tenant.key)).body
      .data.address
    for (let i = 0; i < 3; i++) await deliver(server, address, simpleMessage({ to: address, subject: `m${i}` }))
  }
})
afterAll(() => server.stop())

const list = (query: string, key = tenant.key, id = inboxId) => server.get(`/v1/inboxes/${id}/messages?${query}`, key)

async function expect422(query: string, code: string) {
  const response = await list(query)
  expect({ query, status: response.status }).toEqual({ query, status: 422 })
  expect(errorCode(response)).toBe(code)
}

describe('422 codes', () => {
  test.each(['-1', '181', '1.5', 'abc', '', '1e2', '+5', ' 5', '0x10', '999999999999999999999'])(
    'wait_seconds=%p is invalid_wait_seconds',
    (value) => expect422(`wait_seconds=${encodeURIComponent(value)}`, 'invalid_wait_seconds'),
  )
  test('wait_seconds given twice is invalid_wait_seconds, even with equal values', () =>
    expect422('wait_seconds=1&wait_seconds=1', 'invalid_wait_seconds'))

  test.each(['0', '101', '-1', '1.5', 'abc', '', '1000'])('limit=%p is invalid_limit', (value) =>
    expect422(`limit=${encodeURIComponent(value)}`, 'invalid_limit'),
  )
  test('limit invalid together with include=content is still invalid_limit', async () => {
    await expect422('limit=0&include=content', 'invalid_limit')
    await expect422('limit=101&include=content', 'invalid_limit')
  })
  test('limit given twice is invalid_limit', () => expect422('limit=1&limit=2', 'invalid_limit'))

  test('a tampered cursor is invalid_cursor', async () => {
    const first = await list('limit=1')
    const cursor: string = first.body.next_cursor
    expect(cursor).toEqual(expect.any(String))
    const flipped = cursor.slice(0, 3) + (cursor[3] === 'A' ? 'B' : 'A') + cursor.slice(4)
    await expect422(`limit=1&cursor=${encodeURIComponent(flipped)}`, 'invalid_cursor')
    await expect422(`limit=1&cursor=${encodeURIComponent(cursor + 'x')}`, 'invalid_cursor')
    await expect422('limit=1&cursor=abc', 'invalid_cursor')
    await expect422('limit=1&cursor=', 'invalid_cursor')
    // The genuine cursor still works, so the refusals above are about the tampering.
    expect((await list(`limit=1&cursor=${encodeURIComponent(cursor)}`)).status).toBe(200)
  })
  test("another inbox's cursor is invalid_cursor", async () => {
    const cursor = (await list('limit=1', tenant.key, otherInboxId)).body.next_cursor
    await expect422(`limit=1&cursor=${encodeURIComponent(cursor)}`, 'invalid_cursor')
  })
  test("another organisation's cursor is invalid_cursor", async () => {
    const cursor = (await list('limit=1', foreignTenant.key, foreignInboxId)).body.next_cursor
    await expect422(`limit=1&cursor=${encodeURIComponent(cursor)}`, 'invalid_cursor')
  })
  test("an inbox listing's cursor does not page the inbox list", async () => {
    const cursor = (await list('limit=1')).body.next_cursor
    const response = await server.get(`/v1/inboxes?limit=1&cursor=${encodeURIComponent(cursor)}`, tenant.key)
    expect(response.status).toBe(422)
    expect(errorCode(response)).toBe('invalid_cursor')
  })

  test.each(['contents', 'CONTENT', 'headers', '', 'content,headers'])('include=%p is invalid_include', (value) =>
    expect422(`limit=1&include=${encodeURIComponent(value)}`, 'invalid_include'),
  )
  test('include=content needs limit=1', async () => {
    await expect422('include=content', 'invalid_include')
    await expect422('include=content&limit=2', 'invalid_include')
    await expect422('include=content&limit=100', 'invalid_include')
  })

  test.each(['alice', 'alice@', '@example.com', 'a b@example.com', 'a@b@example.com', 'alice@exa mple.com', ''])(
    'sender=%p is invalid_sender',
    (value) => expect422(`sender=${encodeURIComponent(value)}`, 'invalid_sender'),
  )
  test.each(['alice@example.com', '@example.com', 'exa mple.com', ' example.com', 'example.com\t', 'example.com\n'])(
    'sender_domain=%p is invalid_sender_domain',
    (value) => expect422(`sender_domain=${encodeURIComponent(value)}`, 'invalid_sender_domain'),
  )
  test.each([
    'yesterday',
    '2026-02-30T00:00:00Z', // calendar-invalid
    '2026-02-29T00:00:00Z', // 2026 is not a leap year
    '2026-13-01T00:00:00Z',
    '2026-01-15T24:00:00Z',
    '2026-01-15T12:60:00Z',
    '2026-01-15T12:00:00', // no offset
    '2026-01-15',
    '2026-01-15T12:00Z', // no seconds
    '1768478400000', // epoch milliseconds
    'Thu, 15 Jan 2026 12:00:00 GMT',
    '2026-01-15T12:00:00+2:00',
    '',
  ])('received_after=%p is invalid_received_after', (value) =>
    expect422(`received_after=${encodeURIComponent(value)}`, 'invalid_received_after'),
  )

  test('valid edge values are accepted as given', async () => {
    for (const query of [
      'wait_seconds=0',
      'wait_seconds=180&limit=1',
      'limit=1',
      'limit=100',
      'received_after=2016-12-31T23:59:60Z',
      'received_after=2024-02-29T00:00:00Z',
      'received_after=2026-01-15T12:00:00.123456%2B05:30',
      'sender_domain=example.com',
      'sender=a%2Btag@example.com',
    ]) {
      const response = await list(query)
      expect({ query, status: response.status }).toEqual({ query, status: 200 })
    }
    // limit=100 is not clamped down, and limit=1 is honoured.
    expect((await list('limit=1')).body.data).toHaveLength(1)
    expect((await list('limit=100')).body.data).toHaveLength(3)
  })
})

describe('404 inbox_not_found', () => {
  const ids = () => ({
    unknown: 'inbox_' + '0'.repeat(32),
    malformed: 'not-an-inbox',
    foreign: foreignInboxId,
  })
  for (const wait of ['0', '5']) {
    test(`unknown, malformed and foreign inbox ids answer 404 (wait_seconds=${wait}, no waiting)`, async () => {
      for (const [kind, id] of Object.entries(ids())) {
        const response = await list(`wait_seconds=${wait}`, tenant.key, id)
        expect({ kind, status: response.status }).toEqual({ kind, status: 404 })
        expect(errorCode(response)).toBe('inbox_not_found')
      }
    })
  }
  test('a deleted inbox answers 404, waiting or not', async () => {
    const inbox = await newInbox(server, tenant.key)
    expect((await server.delete(`/v1/inboxes/${inbox.id}`, tenant.key)).status).toBe(204)
    for (const wait of ['0', '5']) {
      const response = await list(`wait_seconds=${wait}`, tenant.key, inbox.id)
      expect(response.status).toBe(404)
      expect(errorCode(response)).toBe('inbox_not_found')
    }
  })
})
