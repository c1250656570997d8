/** listInboxes: order, paging, limit and cursor validation, cursor tampering. */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { ManualClock } from '../../src/clock.ts'
import { describeForBackends, startTestServer, type ApiResponse, type TestServer } from '../support/harness.ts'
import { expectError, expectInbox } from '../support/shapes.ts'

// A hang's deadline, not a speed: on a busy machine this file's servers, processes or
// generated cases take well over Bun's default of 5 s.
setDefaultTimeout(30_000)

let server: TestServer
const clock = new ManualClock(Date.parse('2026-05-01T00:00:00.000Z'))
beforeAll(async () => {
  // A larger quota so pages of 50 and 100 can be filled; the default quota is tested elsewhere.
  server = await startTestServer({
    clock,
    env: { LIMIT_ACTIVE_INBOXES: '150', LIMIT_REQUESTS_PER_KEY: '1000', LIMIT_REQUESTS_PER_ORG: '1000' },
  })
})
afterAll(() => server.stop())

/** Creates `n` inboxes, `stepMs` apart on the manual clock; returns their ids oldest first. */
async function createMany(key: string, n: number, stepMs = 1, on: TestServer = server): Promise<string[]> {
  const ids: string[] = []
  for (let i = 0; i < n; i++) {
    clock.advance(stepMs)
    const response = await on.post('/v1/inboxes', key)
    expect(response.status).toBe(201)
    ids.push(response.body.data.id)
  }
  return ids
}

/** Follows next_cursor to the end; returns every id in order and the page sizes. */
async function walk(key: string, limit: number, between?: (page: number) => Promise<void>) {
  const ids: string[] = []
  const sizes: number[] = []
  let cursor: string | null = null
  for (let page = 0; page < 100; page++) {
    const query: string = `?limit=${limit}` + (cursor ? `&cursor=${encodeURIComponent(cursor)}` : '')
    const response: ApiResponse = await server.get(`/v1/inboxes${query}`, key)
    expect(response.status).toBe(200)
    ids.push(...response.body.data.map((inbox: any) => inbox.id))
    sizes.push(response.body.data.length)
    cursor = response.body.next_cursor
    if (cursor === null) return { ids, sizes }
    await between?.(page)
  }
  throw new Error('paging did not end')
}

describe('shape and order', () => {
  test('an organisation without inboxes gets { data: [], next_cursor: null }', async () => {
    const response = await server.get('/v1/inboxes', (await server.tenant()).key)
    expect(response.status).toBe(200)
    expect(response.body).toEqual({ data: [], next_cursor: null })
  })

  test('newest first, every item a full Inbox, only this organisation, only active', async () => {
    const { key } = await server.tenant()
    const other = await server.tenant()
    await createMany(other.key, 2)
    const ids = await createMany(key, 4, 1000)
    expect((await server.delete(`/v1/inboxes/${ids[1]}`, key)).status).toBe(204)
    const response = await server.get('/v1/inboxes', key)
    expect(Object.keys(response.body).sort()).toEqual(['data', 'next_cursor'])
    expect(response.body.next_cursor).toBeNull()
    for (const inbox of response.body.data) expectInbox(inbox)
    expect(response.body.data.map((i: any) => i.id)).toEqual([ids[3], ids[2], ids[0]])
    const times = response.body.data.map((i: any) => i.created_at)
    expect([...times].sort().reverse()).toEqual(times)
  })

  test('inboxes created in the same millisecond still page without duplicates or gaps', async () => {
    const { key } = await server.tenant()
    const ids = await createMany(key, 9, 0)
    const { ids: seen, sizes } = await walk(key, 2)
    expect(sizes).toEqual([2, 2, 2, 2, 1])
    expect(new Set(seen).size).toBe(9)
    expect([...seen].sort()).toEqual([...ids].sort())
    // Ties are broken the same way on every request.
    expect((await walk(key, 4)).ids).toEqual(seen)
  })
})

describe('paging', () => {
  test('default page size is 50; limit=100 is the largest page', async () => {
    const { key } = await server.tenant()
    const ids = await createMany(key, 101)
    const first = await server.get('/v1/inboxes', key)
    expect(first.body.data.length).toBe(50)
    expect(first.body.next_cursor).toEqual(expect.any(String))
    expect((await walk(key, 50)).sizes).toEqual([50, 50, 1])
    const big = await walk(key, 100)
    expect(big.sizes).toEqual([100, 1])
    expect(big.ids).toEqual([...ids].reverse())
  })

  test('a page that ends exactly at the last item has next_cursor null', async () => {
    const { key } = await server.tenant()
    await createMany(key, 4)
    const { sizes } = await walk(key, 2)
    expect(sizes).toEqual([2, 2])
  })

  test('inboxes added between pages cause no duplicates or gaps among the rest', async () => {
    const { key } = await server.tenant()
    const original = await createMany(key, 8)
    const added: string[] = []
    const { ids } = await walk(key, 3, async () => {
      added.push(...(await createMany(key, 2)))
    })
    // New inboxes are newer than the cursor, so a newest-first walk continues with the originals.
    expect(ids).toEqual([...original].reverse())
    expect(added.length).toBeGreaterThan(0)
    const everything = (await walk(key, 100)).ids
    expect(everything).toEqual([...original, ...added].reverse())
  })

  test('deleting an already seen inbox between pages skips nothing', async () => {
    const { key } = await server.tenant()
    const original = await createMany(key, 6)
    const seen: string[] = []
    const { ids } = await walk(key, 2, async () => {
      // Delete the last item of the page just read: the cursor must not depend on it existing.
      const last = seen.length === 0 ? original[4]! : original[2]!
      seen.push(last)
      expect((await server.delete(`/v1/inboxes/${last}`, key)).status).toBe(204)
    })
    expect(ids).toEqual([...original].reverse())
  })

  test('limit=1 walks one at a time', async () => {
    const { key } = await server.tenant()
    const ids = await createMany(key, 3)
    const { ids: seen, sizes } = await walk(key, 1)
    expect(sizes).toEqual([1, 1, 1])
    expect(seen).toEqual([...ids].reverse())
  })

  describeForBackends(
    ['sqlite'],
    'restarts a server on its own SQLite file; a cursor read on another machine is in test/multi',
    'on the same file',
    () => {
      test('a cursor keeps working after the server restarts on the same file', async () => {
        // A server of its own, stopped before the restart (one server per database file).
        const own = await startTestServer({ clock })
        const { key } = await own.tenant()
        await createMany(key, 3, 1, own)
        const first = await own.get('/v1/inboxes?limit=1', key)
        await own.app.stop()
        const { startApp } = await import('../../src/app.ts')
        const { loadConfig } = await import('../../src/config.ts')
        const { createLogger } = await import('../../src/log.ts')
        const again = await startApp({
          config: loadConfig({
            PORT: '0',
            SMTP_PORT: '0',
            HOST: '127.0.0.1',
            DATABASE_PATH: own.databasePath,
            LOG_LEVEL: 'silent',
          }),
          clock,
          logger: createLogger('silent'),
        })
        try {
          const response = await fetch(
            `${again.httpUrl}/v1/inboxes?limit=5&cursor=${encodeURIComponent(first.body.next_cursor)}`,
            { headers: { authorization: `Bearer ${key}` } },
          )
          expect(response.status).toBe(200)
          expect(((await response.json()) as any).data.length).toBe(2)
        } finally {
          await again.stop()
          await own.stop()
        }
      })
    },
  )
})

describe('limit', () => {
  const invalid = [
    '0',
    '101',
    '-1',
    '1.5',
    '1.0',
    'abc',
    '',
    ' 5',
    '5 ',
    '+5',
    '1e1',
    '0x10',
    '00',
    '99999999999999999999',
    '٥',
    '5abc',
    'null',
    '[5]',
  ]
  for (const value of invalid) {
    test(`limit=${JSON.stringify(value)} is 422 invalid_limit, never clamped`, async () => {
      const { key } = await server.tenant()
      await createMany(key, 1)
      expectError(await server.get(`/v1/inboxes?limit=${encodeURIComponent(value)}`, key), 422, 'invalid_limit')
    })
  }

  test('a repeated limit is 422 invalid_limit, even with equal values', async () => {
    const { key } = await server.tenant()
    expectError(await server.get('/v1/inboxes?limit=5&limit=5', key), 422, 'invalid_limit')
    expectError(await server.get('/v1/inboxes?limit=5&limit=7', key), 422, 'invalid_limit')
  })

  for (const value of ['1', '100', '50', '007']) {
    test(`limit=${value} is accepted`, async () => {
      expect((await server.get(`/v1/inboxes?limit=${value}`, (await server.tenant()).key)).status).toBe(200)
    })
  }

  test('unknown query parameters are ignored', async () => {
    expect((await server.get('/v1/inboxes?foo=bar&page=2', (await server.tenant()).key)).status).toBe(200)
  })

  test('operations without query parameters ignore them, even repeated (getInbox and getUsage have no 422)', async () => {
    const { key } = await server.tenant()
    const { id } = (await server.post('/v1/inboxes', key)).body.data
    for (const query of ['limit=0', 'limit=1&limit=2', 'cursor=a&cursor=b', 'wait_seconds=1&wait_seconds=2']) {
      expect(`${query} ${(await server.get(`/v1/inboxes/${id}?${query}`, key)).status}`).toBe(`${query} 200`)
      expect(`${query} ${(await server.get(`/v1/usage?${query}`, key)).status}`).toBe(`${query} 200`)
    }
  })
})

describe('cursor', () => {
  async function cursorOf(key: string): Promise<string> {
    await createMany(key, 3)
    const cursor = (await server.get('/v1/inboxes?limit=1', key)).body.next_cursor
    expect(cursor).toEqual(expect.any(String))
    return cursor
  }
  const list = (key: string, cursor: string) =>
    server.get(`/v1/inboxes?limit=1&cursor=${encodeURIComponent(cursor)}`, key)

  test('is opaque: it does not show ids or timestamps in clear', async () => {
    const { key } = await server.tenant()
    const cursor = await cursorOf(key)
    expect(cursor).not.toContain('inbox_')
    expect(cursor).not.toMatch(/\d{4}-\d{2}-\d{2}/)
  })

  test('another organisation’s cursor is 422 invalid_cursor', async () => {
    const a = await server.tenant()
    const b = await server.tenant()
    await createMany(b.key, 3)
    const cursor = await cursorOf(a.key)
    expect((await list(a.key, cursor)).status).toBe(200)
    expectError(await list(b.key, cursor), 422, 'invalid_cursor')
  })

  test('a cursor with a modified payload is 422 invalid_cursor', async () => {
    const { key } = await server.tenant()
    const cursor = await cursorOf(key)
    const dot = cursor.indexOf('.')
    const payload = cursor.slice(0, dot)
    const decoded = Buffer.from(payload, 'base64url').toString('utf8')
    // Re-encode the same position pointing one hour later (and, separately, at another id).
    const later = decoded.replace(/T(\d{2})/, (_, h: string) => `T${String((Number(h) + 1) % 24).padStart(2, '0')}`)
    const otherId = decoded.replace(/inbox_[0-9a-f]{4}/, 'inbox_0000')
    for (const forged of [later, otherId, '["2099-01-01T00:00:00.000Z","inbox_ffffffffffffffffffffffffffffffff"]']) {
      expect(forged).not.toBe(decoded)
      const tampered = Buffer.from(forged).toString('base64url') + cursor.slice(dot)
      expectError(await list(key, tampered), 422, 'invalid_cursor')
    }
    // Flipping one character anywhere is caught too.
    for (const at of [0, dot - 1, dot + 1, cursor.length - 1]) {
      const flipped = cursor.slice(0, at) + (cursor[at] === 'A' ? 'B' : 'A') + cursor.slice(at + 1)
      expectError(await list(key, flipped), 422, 'invalid_cursor')
    }
  })

  test('a truncated or extended cursor is 422 invalid_cursor', async () => {
    const { key } = await server.tenant()
    const cursor = await cursorOf(key)
    for (const bad of [
      cursor.slice(0, -1),
      cursor.slice(0, cursor.length / 2),
      cursor.slice(1),
      cursor.split('.')[0]!,
      cursor + 'A',
      cursor + '.x',
      `${cursor}${cursor}`,
    ]) {
      expectError(await list(key, bad), 422, 'invalid_cursor')
    }
  })

  const junk = ['', 'x', '.', '..', 'null', 'eyJ9.abc', '%00', 'a'.repeat(600), '{"at":"x"}', 'ä.ö']
  for (const value of junk) {
    test(`cursor=${JSON.stringify(value.slice(0, 20))} is 422 invalid_cursor`, async () => {
      expectError(await list((await server.tenant()).key, value), 422, 'invalid_cursor')
    })
  }

  test('a repeated cursor is 422 invalid_cursor', async () => {
    const { key } = await server.tenant()
    const cursor = encodeURIComponent(await cursorOf(key))
    expectError(await server.get(`/v1/inboxes?cursor=${cursor}&cursor=${cursor}`, key), 422, 'invalid_cursor')
  })

  test('a cursor stays valid with a different limit, and when its inbox was deleted', async () => {
    const { key } = await server.tenant()
    const ids = await createMany(key, 3)
    const cursor = (await server.get('/v1/inboxes?limit=1', key)).body.next_cursor
    expect((await server.delete(`/v1/inboxes/${ids[2]}`, key)).status).toBe(204)
    const response = await server.get(`/v1/inboxes?limit=10&cursor=${encodeURIComponent(cursor)}`, key)
    expect(response.status).toBe(200)
    expect(response.body.data.map((i: any) => i.id)).toEqual([ids[1], ids[0]])
  })

  test('another key of the same organisation may continue the listing', async () => {
    const owner = await server.tenant()
    const cursor = await cursorOf(owner.key)
    expect((await list(await server.extraKey(owner.organizationId), cursor)).status).toBe(200)
  })
})
