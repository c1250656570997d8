/**
 * The inbox lists' server side: the per-inbox count and last arrival come from one grouped
 * read on the messages index (never a scan of the table), the filter form maps onto the
 * API's own list filters, and a value the form cannot use is a 400 that says why.
 */
import { Database } from 'bun:sqlite'
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { isoTime } from '../../src/clock.ts'
import { inboxStatsQuery } from '../../src/storage/sqlite/store/inboxes.ts'
import { emptyFilter, toMessageQuery } from '../../src/console/inbox-filter.ts'
import { TEXT_SEARCH_WINDOW } from '../../src/core/messages/search-filters.ts'
import { storedFilters } from '../../src/core/messages/list-messages.ts'
import { SEARCH_WINDOW, searchWindow, type SearchQuery } from '../../src/core/messages/search-organization.ts'
import { searchSelect } from '../../src/storage/sqlite/store/messages.ts'
import { sendMail, simpleMessage } from '../support/smtp.ts'
import { setUp, type ConsoleClient } from '../support/console-client.ts'
import { describeForBackends, startTestServer, type TestServer } from '../support/harness.ts'

let server: TestServer
let owner: ConsoleClient
let org: string
let key: string

beforeAll(async () => {
  server = await startTestServer()
  ;({ client: owner, organizationId: org, key } = await setUp(server, { email: 'owner@example.com' }))
})
afterAll(() => server.stop())

describeForBackends(
  ['sqlite'],
  "it reads SQLite's own query plan of the SQLite adapter",
  "the SQLite adapter's inbox count plan",
  () => {
    test('the count and last arrival read the messages index, not the table', () => {
      const { sql, params } = inboxStatsQuery(
        server.app.storage!.db,
        ['inbox_a', 'inbox_b'],
        new Date().toISOString(),
      ).toSQL()
      const db = new Database(server.databasePath, { readonly: true })
      const plan = (db.query(`EXPLAIN QUERY PLAN ${sql}`).all(...(params as string[])) as { detail: string }[]).map(
        (row) => row.detail,
      )
      db.close()
      expect(plan.join('\n')).toContain('USING INDEX messages_by_inbox_newest (inbox_id=?)')
      expect(plan.join('\n')).not.toMatch(/SCAN messages\b(?! USING)/)
    })
  },
)

test('the filter form maps onto the API filters', () => {
  const f = { ...emptyFilter, subject: 'Reset' }
  expect(toMessageQuery(f, 100)).toEqual({ limit: 100, includeContent: false, subject: 'Reset' })
  expect(toMessageQuery({ ...f, subject: '', from: '@Shop.example' }, 100)).toEqual({
    limit: 100,
    includeContent: false,
    senderDomain: 'Shop.example',
  })
  expect(toMessageQuery({ ...f, subject: '', from: 'shop.example' }, 100)).toEqual({
    limit: 100,
    includeContent: false,
    senderDomain: 'shop.example',
  })
  expect(toMessageQuery({ ...f, subject: '', from: 'a@b.example' }, 100)).toEqual({
    limit: 100,
    includeContent: false,
    sender: 'a@b.example',
  })
  expect(toMessageQuery({ ...f, subject: '', since: '2026-11-25' }, 100)).toEqual({
    limit: 100,
    includeContent: false,
    receivedAfter: Date.parse('2026-11-25T00:00:00Z'),
  })
  expect(toMessageQuery({ ...f, subject: '', since: '2026-11-25 14:30' }, 100)).toEqual({
    limit: 100,
    includeContent: false,
    receivedAfter: Date.parse('2026-11-25T14:30:00Z'),
  })
  expect(toMessageQuery({ ...f, since: 'yesterday' }, 100)).toHaveProperty('error')
  expect(toMessageQuery({ ...f, from: 'a b@c' }, 100)).toHaveProperty('error')
})

test('a bad filter value is a 400 on the page; a forged cursor is refused, not a 500', async () => {
  const inbox = (await server.post('/v1/inboxes', key)).body.data
  const bad = await owner.get(`/console/orgs/${org}/inboxes/${inbox.id}?since=31.12.2026`)
  expect(bad.status).toBe(400)
  expect(bad.html).toContain('Received since')
  expect((await owner.get(`/console/orgs/${org}/inboxes/${inbox.id}?cursor=forged`)).status).toBe(400)
  expect((await owner.get(`/console/orgs/${org}/inboxes?cursor=forged`)).status).toBe(400)
})

describeForBackends(
  ['sqlite'],
  "it reads SQLite's own query plan of the SQLite adapter",
  "the SQLite adapter's search plan",
  () => {
    test('search across inboxes walks the organisation index, bounded, never a scan of messages', () => {
      // The adapter's query as core's searchOrganization asks for it.
      const searchQuery = (query: SearchQuery) =>
        searchSelect(server.app.storage!.db, {
          organizationId: org,
          now: isoTime(Date.now()),
          filters: storedFilters(query),
          window: searchWindow(query),
          limit: 50,
        })
      const { sql, params } = searchQuery({ subject: 'reset', senderDomain: 'shop.example' }).toSQL()
      const db = new Database(server.databasePath, { readonly: true })
      const plan = (
        db.query(`EXPLAIN QUERY PLAN ${sql}`).all(...(params as (string | number)[])) as { detail: string }[]
      )
        .map((row) => row.detail)
        .join('\n')
      db.close()
      expect(plan).toContain('messages_by_organization_newest (organization_id=?)')
      expect(plan).not.toMatch(/SCAN messages(?! USING)/)
      expect(sql).toContain(`limit ?`)
      // A subject query looks through the smaller window, as a text query does; others through the larger.
      expect(params).toContain(TEXT_SEARCH_WINDOW)
      expect(params).not.toContain(SEARCH_WINDOW)
      expect(searchQuery({ senderDomain: 'shop.example' }).toSQL().params).toContain(SEARCH_WINDOW)
    })
  },
)

test('search finds matches in every active inbox of the organisation, and only there', async () => {
  const [a, b, gone] = [
    (await server.post('/v1/inboxes', key)).body.data,
    (await server.post('/v1/inboxes', key)).body.data,
    (await server.post('/v1/inboxes', key)).body.data,
  ]
  for (const [inbox, subject] of [
    [a, 'Reset your password'],
    [b, 'Password reset requested'],
    [b, 'Welcome'],
    [gone, 'Reset in a deleted inbox'],
  ] as const) {
    expect(
      (await sendMail(server.app.smtpPort, { to: [inbox.address] }, simpleMessage({ to: inbox.address, subject }))).data
        ?.code,
    ).toBe(250)
  }
  await server.delete(`/v1/inboxes/${gone.id}`, key)
  const found = await owner.get(`/console/orgs/${org}/search?subject=RESET`)
  expect(found.status).toBe(200)
  expect(found.html).toContain('Reset your password')
  expect(found.html).toContain('Password reset requested')
  expect(found.html).not.toContain('Welcome')
  expect(found.html).not.toContain('deleted inbox')
  expect((await owner.get(`/console/orgs/${org}/search?since=soon`)).status).toBe(400)
})
