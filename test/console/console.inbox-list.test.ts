/**
 * The inbox lists' server side: the per-inbox count and last arrival come from one grouped
 * read on the messages index (never a scan of the table), the filter form maps onto the
 * API's own list filters, and a value the form cannot use is a 400 that says why.
 */
import { Database } from 'bun:sqlite'
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { inboxStatsQuery } from '../../src/core/inboxes/inbox-stats.ts'
import { toMessageQuery } from '../../src/console/inbox-filter.ts'
import { setUp, type ConsoleClient } from '../support/console-client.ts'
import { startTestServer, type TestServer } from '../support/harness.ts'

let server: TestServer
let owner: ConsoleClient
let org: string
let key: string

beforeAll(async () => {
  server = await startTestServer()
  ;({ client: owner, organizationId: org, key } = await setUp(server, { email: 'owner@example.com' }))
})
afterAll(() => server.stop())

test('the count and last arrival read the messages index, not the table', () => {
  const { sql, params } = inboxStatsQuery(server.app.services.storage.db, ['inbox_a', 'inbox_b'], Date.now()).toSQL()
  const db = new Database(server.databasePath, { readonly: true })
  const plan = (db.query(`EXPLAIN QUERY PLAN ${sql}`).all(...(params as string[])) as { detail: string }[]).map((row) => row.detail)
  db.close()
  expect(plan.join('\n')).toContain('USING INDEX messages_by_inbox_newest (inbox_id=?)')
  expect(plan.join('\n')).not.toMatch(/SCAN messages\b(?! USING)/)
})

test('the filter form maps onto the API filters', () => {
  const f = { subject: 'Reset', from: '', since: '', cursor: '' }
  expect(toMessageQuery(f, 100)).toEqual({ limit: 100, includeContent: false, subject: 'Reset' })
  expect(toMessageQuery({ ...f, subject: '', from: '@Shop.example' }, 100)).toEqual({ limit: 100, includeContent: false, senderDomain: 'Shop.example' })
  expect(toMessageQuery({ ...f, subject: '', from: 'shop.example' }, 100)).toEqual({ limit: 100, includeContent: false, senderDomain: 'shop.example' })
  expect(toMessageQuery({ ...f, subject: '', from: 'a@b.example' }, 100)).toEqual({ limit: 100, includeContent: false, sender: 'a@b.example' })
  expect(toMessageQuery({ ...f, subject: '', since: '2026-11-25' }, 100)).toEqual({ limit: 100, includeContent: false, receivedAfter: Date.parse('2026-11-25T00:00:00Z') })
  expect(toMessageQuery({ ...f, subject: '', since: '2026-11-25 14:30' }, 100)).toEqual({ limit: 100, includeContent: false, receivedAfter: Date.parse('2026-11-25T14:30:00Z') })
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
