/** createInbox, getInbox, deleteInbox: success shapes, quota, address uniqueness, 404s. */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { expectError, expectInbox } from '../support/shapes.ts'

// A hang's deadline, not a speed: on a busy machine this file's servers, processes or
// generated cases take well over Bun's default of 5 s.
setDefaultTimeout(30_000)

let server: TestServer
beforeAll(async () => {
  server = await startTestServer()
})
afterAll(() => server.stop())

const create = (key: string, prefix?: string) =>
  server.post('/v1/inboxes', key, prefix === undefined ? undefined : { prefix })

describe('createInbox then getInbox', () => {
  test('201 with { data: Inbox }, and getInbox returns the same resource', async () => {
    const { key } = await server.tenant()
    const before = Date.now()
    const created = await create(key, 'first-box')
    expect(created.status).toBe(201)
    expect(Object.keys(created.body)).toEqual(['data'])
    expectInbox(created.body.data)
    expect(created.body.data.address).toBe('first-box@inbox.test')
    const at = Date.parse(created.body.data.created_at)
    expect(at).toBeGreaterThanOrEqual(before - 1)
    expect(at).toBeLessThanOrEqual(Date.now() + 1)

    const fetched = await server.get(`/v1/inboxes/${created.body.data.id}`, key)
    expect(fetched.status).toBe(200)
    expect(fetched.body).toEqual({ data: created.body.data })
  })

  test('the receiving domain comes from RECEIVING_DOMAIN, lowercased', async () => {
    const other = await startTestServer({ env: { RECEIVING_DOMAIN: 'Mail.Example.COM' } })
    try {
      const response = await other.post('/v1/inboxes', (await other.tenant()).key, { prefix: 'domain-check' })
      expect(response.body.data.address).toBe('domain-check@mail.example.com')
    } finally {
      await other.stop()
    }
  })
})

describe('deleteInbox', () => {
  test('204 with an empty body; afterwards the inbox is gone from every operation', async () => {
    const { key } = await server.tenant()
    const { id } = (await create(key, 'short-lived')).body.data
    const deleted = await server.delete(`/v1/inboxes/${id}`, key)
    expect(deleted.status).toBe(204)
    expect(deleted.text).toBe('')
    expect(deleted.headers.get('x-request-id')).toBeTruthy()

    expectError(await server.get(`/v1/inboxes/${id}`, key), 404, 'inbox_not_found')
    expectError(await server.delete(`/v1/inboxes/${id}`, key), 404, 'inbox_not_found')
    expect((await server.get('/v1/inboxes', key)).body).toEqual({ data: [], next_cursor: null })
    expect((await server.get('/v1/usage', key)).body.inboxes.active).toBe(0)
  })

  test('a deleted address can be taken again (by anyone)', async () => {
    const a = await server.tenant()
    const b = await server.tenant()
    const { id } = (await create(a.key, 'recycled-name')).body.data
    expectError(await create(b.key, 'recycled-name'), 409, 'address_unavailable')
    expect((await server.delete(`/v1/inboxes/${id}`, a.key)).status).toBe(204)
    const again = await create(b.key, 'recycled-name')
    expect(again.status).toBe(201)
    expect(again.body.data.id).not.toBe(id)
  })
})

describe('inbox quota', () => {
  test('11 active inboxes; the 12th is 409 inbox_quota_exceeded; delete frees a slot', async () => {
    const { key } = await server.tenant()
    const ids: string[] = []
    for (let i = 0; i < 11; i++) {
      const response = await create(key)
      expect(response.status).toBe(201)
      ids.push(response.body.data.id)
    }
    expectError(await create(key), 409, 'inbox_quota_exceeded')
    // A prefixed request is refused for the quota too, and a taken prefix does not change that.
    expectError(await create(key, 'quota-prefixed'), 409, 'inbox_quota_exceeded')
    expect((await server.get('/v1/usage', key)).body.inboxes).toEqual({ active: 11, limit: 11, remaining: 0 })

    expect((await server.delete(`/v1/inboxes/${ids[0]}`, key)).status).toBe(204)
    expect((await create(key)).status).toBe(201)
    expectError(await create(key), 409, 'inbox_quota_exceeded')
  })

  test('the quota is per organisation', async () => {
    const full = await server.tenant()
    for (let i = 0; i < 11; i++) expect((await create(full.key)).status).toBe(201)
    expectError(await create(full.key), 409, 'inbox_quota_exceeded')
    expect((await create((await server.tenant()).key)).status).toBe(201)
  })

  test('concurrent creates never exceed the quota', async () => {
    const { key } = await server.tenant()
    const responses = await Promise.all(Array.from({ length: 20 }, () => create(key)))
    expect(responses.filter((r) => r.status === 201).length).toBe(11)
    for (const r of responses.filter((r) => r.status !== 201)) expectError(r, 409, 'inbox_quota_exceeded')
  })

  test('LIMIT_ACTIVE_INBOXES changes the quota', async () => {
    const other = await startTestServer({ env: { LIMIT_ACTIVE_INBOXES: '2' } })
    try {
      const { key } = await other.tenant()
      expect((await other.post('/v1/inboxes', key)).status).toBe(201)
      expect((await other.post('/v1/inboxes', key)).status).toBe(201)
      expectError(await other.post('/v1/inboxes', key), 409, 'inbox_quota_exceeded')
    } finally {
      await other.stop()
    }
  })
})

describe('address_unavailable', () => {
  test('a taken prefix is 409 in the same organisation and across organisations, in any case', async () => {
    const a = await server.tenant()
    expect((await create(a.key, 'taken-name')).status).toBe(201)
    expectError(await create(a.key, 'taken-name'), 409, 'address_unavailable')
    expectError(await create((await server.tenant()).key, 'TAKEN-Name'), 409, 'address_unavailable')
  })

  test('two concurrent requests for one prefix: exactly one wins', async () => {
    const responses = await Promise.all([
      create((await server.tenant()).key, 'race-name'),
      create((await server.tenant()).key, 'race-name'),
    ])
    expect(responses.map((r) => r.status).sort()).toEqual([201, 409])
    expectError(responses.find((r) => r.status === 409)!, 409, 'address_unavailable')
  })

  test('a refused request does not use a quota slot', async () => {
    const a = await server.tenant()
    expect((await create(a.key, 'slot-check')).status).toBe(201)
    expectError(await create(a.key, 'slot-check'), 409, 'address_unavailable')
    expect((await server.get('/v1/usage', a.key)).body.inboxes.active).toBe(1)
  })
})

describe('unknown ids', () => {
  const unknownIds = [
    'inbox_00000000000000000000000000000000',
    'inbox_ffffffffffffffffffffffffffffffff',
    'inbox_FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF',
    'inbox_123',
    'msg_00000000000000000000000000000000',
    'nope',
    'inbox_' + 'a'.repeat(33),
    '%20',
    "1' OR '1'='1",
  ]
  for (const id of unknownIds) {
    test(`GET and DELETE ${JSON.stringify(id)} are 404 inbox_not_found`, async () => {
      const { key } = await server.tenant()
      const path = `/v1/inboxes/${encodeURIComponent(id)}`
      expectError(await server.get(path, key), 404, 'inbox_not_found')
      expectError(await server.delete(path, key), 404, 'inbox_not_found')
    })
  }

  test('an id is matched exactly: an uppercase copy of a real id is unknown', async () => {
    const { key } = await server.tenant()
    const { id } = (await create(key)).body.data
    expectError(await server.get(`/v1/inboxes/${id.toUpperCase()}`, key), 404, 'inbox_not_found')
    expectError(await server.get(`/v1/inboxes/${id.replace('inbox_', 'INBOX_')}`, key), 404, 'inbox_not_found')
  })
})
