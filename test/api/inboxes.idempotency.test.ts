/** createInbox idempotency (spec createInbox rules 1-4 and 7), also across a crash and restart. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startApp } from '../../src/app.ts'
import { ManualClock } from '../../src/clock.ts'
import { loadConfig } from '../../src/config.ts'
import { createLogger } from '../../src/log.ts'
import { describeForBackends, startTestServer, type TestServer } from '../support/harness.ts'
import { SteerableRouting } from '../support/routing-double.ts'
import { expectError, expectInbox } from '../support/shapes.ts'

const HOUR = 3_600_000
let server: TestServer
const clock = new ManualClock(Date.parse('2026-03-10T08:00:00.000Z'))
const routing = new SteerableRouting()
beforeAll(async () => {
  server = await startTestServer({ clock, routing })
})
afterAll(() => server.stop())

let counter = 0
const freshKey = () => `idem-key-${++counter}-${'x'.repeat(8)}`
const create = (key: string, idempotencyKey: string | undefined, body?: unknown) =>
  server.request('POST', '/v1/inboxes', {
    key,
    rawBody: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    headers: idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey },
  })
const activeInboxes = async (key: string) => (await server.get('/v1/usage', key)).body.inboxes.active

describe('replay', () => {
  test('same key and same body: the cached 201 with an identical body, and one inbox', async () => {
    const { key } = await server.tenant()
    const idem = freshKey()
    const first = await create(key, idem, { prefix: 'replayed-box' })
    expect(first.status).toBe(201)
    expectInbox(first.body.data)
    const second = await create(key, idem, { prefix: 'replayed-box' })
    expect(second.status).toBe(201)
    expect(second.text).toBe(first.text)
    expect(second.headers.get('x-request-id')).not.toBe(first.headers.get('x-request-id'))
    expect(await activeInboxes(key)).toBe(1)
  })

  test('a generated address is replayed too (no body both times)', async () => {
    const { key } = await server.tenant()
    const idem = freshKey()
    const first = await create(key, idem)
    const second = await create(key, idem)
    expect(second.status).toBe(201)
    expect(second.body).toEqual(first.body)
    expect(await activeInboxes(key)).toBe(1)
  })

  test('bodies equal after normalisation are the same request', async () => {
    const { key } = await server.tenant()
    const idem = freshKey()
    const first = await create(key, idem, { prefix: 'Case-Box' })
    expect(first.status).toBe(201)
    for (const body of [{ prefix: 'case-box' }, { prefix: 'CASE-BOX' }, '  {"prefix" : "case-box"}  ']) {
      const again = await create(key, idem, body)
      expect(again.status).toBe(201)
      expect(again.body).toEqual(first.body)
    }
    expect(await activeInboxes(key)).toBe(1)
  })

  test('no body, an empty body and {} are one normalised body', async () => {
    const { key } = await server.tenant()
    const idem = freshKey()
    const first = await create(key, idem)
    expect((await create(key, idem, '')).body).toEqual(first.body)
    expect((await create(key, idem, '{}')).body).toEqual(first.body)
  })

  test('the replay is served even after the inbox was deleted, and after the quota filled', async () => {
    const { key } = await server.tenant()
    const idem = freshKey()
    const first = await create(key, idem, { prefix: 'gone-later' })
    expect((await server.delete(`/v1/inboxes/${first.body.data.id}`, key)).status).toBe(204)
    const replay = await create(key, idem, { prefix: 'gone-later' })
    expect(replay.status).toBe(201)
    expect(replay.text).toBe(first.text)
    for (let i = 0; i < 11; i++) expect((await create(key, undefined)).status).toBe(201)
    expectError(await create(key, undefined), 409, 'inbox_quota_exceeded')
    expect((await create(key, idem, { prefix: 'gone-later' })).text).toBe(first.text)
  })
})

describe('key reused with a different normalised body', () => {
  test('409 idempotency_key_reused; nothing is created', async () => {
    const { key } = await server.tenant()
    const idem = freshKey()
    expect((await create(key, idem, { prefix: 'original-box' })).status).toBe(201)
    expectError(await create(key, idem, { prefix: 'other-box' }), 409, 'idempotency_key_reused')
    expectError(await create(key, idem), 409, 'idempotency_key_reused')
    expectError(await create(key, idem, '{}'), 409, 'idempotency_key_reused')
    expect(await activeInboxes(key)).toBe(1)
  })

  test('a first request with no body, then one with a prefix', async () => {
    const { key } = await server.tenant()
    const idem = freshKey()
    expect((await create(key, idem)).status).toBe(201)
    expectError(await create(key, idem, { prefix: 'now-with-prefix' }), 409, 'idempotency_key_reused')
  })

  test('an invalid body is refused for what it is, before the key is looked at', async () => {
    const { key } = await server.tenant()
    const idem = freshKey()
    expect((await create(key, idem, { prefix: 'valid-first' })).status).toBe(201)
    expectError(await create(key, idem, '[]'), 422, 'invalid_json')
    expectError(await create(key, idem, { prefix: 'a' }), 422, 'invalid_prefix')
    expectError(await create(key, idem, { other: 1 }), 422, 'unknown_property')
  })
})

describe('key length', () => {
  for (const length of [0, 1, 7, 201, 1000]) {
    test(`${length} characters is 422 invalid_idempotency_key`, async () => {
      const { key } = await server.tenant()
      expectError(await create(key, 'k'.repeat(length)), 422, 'invalid_idempotency_key')
      expect(await activeInboxes(key)).toBe(0)
    })
  }
  for (const length of [8, 200]) {
    test(`${length} characters is accepted and replays`, async () => {
      const { key } = await server.tenant()
      const idem = 'k'.repeat(length)
      const first = await create(key, idem)
      expect(first.status).toBe(201)
      expect((await create(key, idem)).text).toBe(first.text)
    })
  }
  test('the key is compared exactly (case matters)', async () => {
    const { key } = await server.tenant()
    const first = await create(key, 'CaseKey-1')
    const second = await create(key, 'casekey-1')
    expect(second.status).toBe(201)
    expect(second.body.data.id).not.toBe(first.body.data.id)
  })
  test('a bad key is refused before the body is parsed', async () => {
    const { key } = await server.tenant()
    expectError(await create(key, 'short', '[]'), 422, 'invalid_idempotency_key')
  })
})

describe('retention: 24 hours', () => {
  test('replayed just before 24 h; a new request just after', async () => {
    const { key } = await server.tenant()
    const idem = freshKey()
    const start = clock.now()
    try {
      const first = await create(key, idem, { prefix: 'expiring-box' })
      clock.set(start + 24 * HOUR - 1)
      expect((await create(key, idem, { prefix: 'expiring-box' })).text).toBe(first.text)
      clock.set(start + 24 * HOUR)
      // Expired: the key runs anew, so the taken prefix now answers like any new request.
      expectError(await create(key, idem, { prefix: 'expiring-box' }), 409, 'address_unavailable')
      const fresh = await create(key, idem, { prefix: 'after-expiry' })
      expect(fresh.status).toBe(201)
      expect(fresh.body.data.id).not.toBe(first.body.data.id)
    } finally {
      clock.set(start)
    }
  })

  test('after expiry a different body is no longer "reused"', async () => {
    const { key } = await server.tenant()
    const idem = freshKey()
    const start = clock.now()
    try {
      expect((await create(key, idem)).status).toBe(201)
      clock.set(start + 25 * HOUR)
      expect((await create(key, idem, { prefix: 'new-body-ok' })).status).toBe(201)
    } finally {
      clock.set(start)
    }
  })
})

describe('scope: per organisation', () => {
  test('the same key in two organisations makes two inboxes', async () => {
    const a = await server.tenant()
    const b = await server.tenant()
    const idem = freshKey()
    const first = await create(a.key, idem)
    const second = await create(b.key, idem)
    expect(second.status).toBe(201)
    expect(second.body.data.id).not.toBe(first.body.data.id)
    // And a different body in the other organisation is not "reused".
    expect((await create((await server.tenant()).key, idem, { prefix: 'third-org' })).status).toBe(201)
  })

  test('two keys of one organisation share the scope', async () => {
    const a = await server.tenant()
    const second = await server.extraKey(a.organizationId)
    const idem = freshKey()
    const first = await create(a.key, idem)
    expect((await create(second, idem)).text).toBe(first.text)
  })
})

describe('in progress', () => {
  test('a second request while the first runs is 409 idempotency_in_progress with Retry-After: 1', async () => {
    const { key } = await server.tenant()
    const idem = freshKey()
    routing.hold()
    const before = routing.createCalls
    const slow = create(key, idem, { prefix: 'slow-box' })
    try {
      await routing.createCallsReach(before + 1)
      const concurrent = await create(key, idem, { prefix: 'slow-box' })
      expectError(concurrent, 409, 'idempotency_in_progress')
      expect(concurrent.headers.get('retry-after')).toBe('1')
      // A different body while running is still a reuse of the key.
      expectError(await create(key, idem, { prefix: 'other-body' }), 409, 'idempotency_key_reused')
    } finally {
      routing.release()
    }
    const first = await slow
    expect(first.status).toBe(201)
    const retry = await create(key, idem, { prefix: 'slow-box' })
    expect(retry.status).toBe(201)
    expect(retry.text).toBe(first.text)
    expect(await activeInboxes(key)).toBe(1)
  })

  test('other keys and key-less requests are not blocked by one in progress', async () => {
    const { key } = await server.tenant()
    routing.hold()
    const before = routing.createCalls
    const pending: Array<ReturnType<typeof create>> = []
    try {
      pending.push(create(key, freshKey()))
      await routing.createCallsReach(before + 1)
      pending.push(create(key, freshKey()), create(key, undefined))
      // Both got past the idempotency check and reached the provider.
      await routing.createCallsReach(before + 3)
    } finally {
      routing.release()
    }
    for (const response of await Promise.all(pending)) expect(response.status).toBe(201)
  })
})

describe('in progress, however long it takes', () => {
  test('a first request still running after minutes keeps answering idempotency_in_progress', async () => {
    const { key } = await server.tenant()
    const idem = freshKey()
    const start = clock.now()
    routing.hold()
    const before = routing.createCalls
    const slow = create(key, idem, { prefix: 'very-slow-box' })
    try {
      await routing.createCallsReach(before + 1)
      for (const minutes of [1, 3, 30]) {
        clock.set(start + minutes * 60_000)
        expectError(await create(key, idem, { prefix: 'very-slow-box' }), 409, 'idempotency_in_progress')
      }
      expect(routing.createCalls).toBe(before + 1)
    } finally {
      routing.release()
      clock.set(start)
    }
    expect((await slow).status).toBe(201)
    expect(await activeInboxes(key)).toBe(1)
  })

  test('ten concurrent requests with one new key create one inbox', async () => {
    const { key } = await server.tenant()
    const idem = freshKey()
    const responses = await Promise.all(Array.from({ length: 10 }, () => create(key, idem, { prefix: 'herd-box' })))
    const created = responses.filter((r) => r.status === 201)
    expect(created.length).toBeGreaterThanOrEqual(1)
    for (const r of created) expect(r.body).toEqual(created[0]!.body)
    for (const r of responses.filter((r) => r.status !== 201)) {
      expectError(r, 409, 'idempotency_in_progress')
      expect(r.headers.get('retry-after')).toBe('1')
    }
    expect(await activeInboxes(key)).toBe(1)
  })
})

describe('failures are not cached', () => {
  for (const [failure, status] of [
    ['rejected', 502],
    ['unavailable', 503],
    ['crash', 503],
  ] as const) {
    test(`routing ${failure}: ${status} email_routing_unavailable, no inbox, and the key can be retried`, async () => {
      const { key } = await server.tenant()
      const idem = freshKey()
      routing.createFailure = failure
      try {
        expectError(await create(key, idem, { prefix: `fail-${failure}` }), status, 'email_routing_unavailable')
      } finally {
        routing.createFailure = null
      }
      expect(await activeInboxes(key)).toBe(0)
      expect((await server.get('/v1/inboxes', key)).body.data).toEqual([])
      const retry = await create(key, idem, { prefix: `fail-${failure}` })
      expect(retry.status).toBe(201)
      expect(retry.body.data.local_part).toBe(`fail-${failure}`)
    })
  }

  test('a 409 address_unavailable is not cached either', async () => {
    const owner = await server.tenant()
    const { key } = await server.tenant()
    const idem = freshKey()
    const { id } = (await create(owner.key, undefined, { prefix: 'held-name' })).body.data
    expectError(await create(key, idem, { prefix: 'held-name' }), 409, 'address_unavailable')
    expect((await server.delete(`/v1/inboxes/${id}`, owner.key)).status).toBe(204)
    expect((await create(key, idem, { prefix: 'held-name' })).status).toBe(201)
  })
})

test('an unreadable cached result is 503 idempotency_unavailable', async () => {
  const { key, organizationId } = await server.tenant()
  const idem = freshKey()
  expect((await create(key, idem)).status).toBe(201)
  await server.query(
    'UPDATE idempotency_records SET response_body = ? WHERE organization_id = ? AND idempotency_key = ?',
    '{not json',
    organizationId,
    idem,
  )
  expectError(await create(key, idem), 503, 'idempotency_unavailable')
})

describe('routing rule lifecycle', () => {
  test('create makes a rule for the address; delete removes it', async () => {
    const { key } = await server.tenant()
    const { id, address } = (await create(key, undefined, { prefix: 'ruled-box' })).body.data
    expect(routing.rules.has(address)).toBe(true)
    expect((await server.delete(`/v1/inboxes/${id}`, key)).status).toBe(204)
    expect(routing.rules.has(address)).toBe(false)
  })

  for (const [failure, status] of [
    ['rejected', 502],
    ['unavailable', 503],
  ] as const) {
    test(`delete with the provider ${failure}: ${status} email_routing_unavailable and the inbox stays`, async () => {
      const { key } = await server.tenant()
      const { id, address } = (await create(key, undefined)).body.data
      routing.deleteFailure = failure
      try {
        expectError(await server.delete(`/v1/inboxes/${id}`, key), status, 'email_routing_unavailable')
      } finally {
        routing.deleteFailure = null
      }
      expect((await server.get(`/v1/inboxes/${id}`, key)).status).toBe(200)
      expect(routing.rules.has(address)).toBe(true)
      expect((await server.delete(`/v1/inboxes/${id}`, key)).status).toBe(204)
    })
  }
})

describeForBackends(['sqlite'], 'restarts a server on its own SQLite file', 'restart on the same SQLite file', () => {
  /** The process on `first`'s file after it died, as after a crash and a restart (one server per file: `first` is stopped). */
  async function restart(first: TestServer) {
    await first.app.stop()
    const app = await startApp({
      config: loadConfig({
        PORT: '0',
        SMTP_PORT: '0',
        HOST: '127.0.0.1',
        DATABASE_PATH: first.databasePath,
        RECEIVING_DOMAIN: 'inbox.test',
      }),
      logger: createLogger('silent'),
    })
    const post = (key: string, idempotencyKey: string, body: unknown) =>
      fetch(`${app.httpUrl}/v1/inboxes`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'idempotency-key': idempotencyKey },
        body: JSON.stringify(body),
      })
    return { app, post }
  }

  test('a createInbox cut off by a crash neither blocks its key nor holds its address after restart', async () => {
    const first = await startTestServer()
    const { key, organizationId } = await first.tenant()
    const now = new Date().toISOString()
    // The state a process leaves when it dies between claiming the key and activating the inbox.
    const sqlite = first.app.storage!.sqlite
    sqlite
      .query(
        "INSERT INTO idempotency_records (organization_id, idempotency_key, request_fingerprint, state, created_at, expires_at) VALUES (?, 'crashed-key-1', 'x', 'in_progress', ?, ?)",
      )
      .run(organizationId, now, new Date(Date.now() + 86_400_000).toISOString())
    sqlite
      .query(
        "INSERT INTO inboxes (id, organization_id, local_part, address, state, created_at) VALUES (?, ?, 'crashed-box', 'crashed-box@inbox.test', 'creating', ?)",
      )
      .run(`inbox_${'c'.repeat(32)}`, organizationId, now)
    expectError(await first.post('/v1/inboxes', key, { prefix: 'crashed-box' }), 409, 'address_unavailable')

    const { app, post } = await restart(first)
    try {
      // Nothing runs at boot, so the claim is abandoned: the client's one retry must succeed.
      const retry = await post(key, 'crashed-key-1', { prefix: 'crashed-box' })
      expect(retry.status).toBe(201)
      expect(((await retry.json()) as any).data.local_part).toBe('crashed-box')
    } finally {
      await app.stop()
      await first.stop()
    }
  })
})
