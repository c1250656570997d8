/**
 * The viewer's search filters on the server: recipient, text (subject and body), has
 * attachment and a date range, ANDed, in one inbox and across an organisation's inboxes.
 * Each filter's query reads an index (or a bounded window of one), never a scan of the
 * table; hostile values are a 400 that says why, never a 500; the URL carries the filters
 * and paging keeps them.
 */
import { Database } from 'bun:sqlite'
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { isoTime, ManualClock } from '../../src/clock.ts'
import { emptyFilter, filterHref, readInboxFilter, toMessageQuery } from '../../src/console/inbox-filter.ts'
import { storedFilters } from '../../src/core/messages/list-messages.ts'
import { TEXT_SEARCH_CHARS } from '../../src/core/inbound/search-text.ts'
import { TEXT_SEARCH_WINDOW } from '../../src/core/messages/search-filters.ts'
import { searchWindow } from '../../src/core/messages/search-organization.ts'
import { listingSql, searchSelect } from '../../src/storage/sqlite/store/messages.ts'
import { type ConsoleClient, setUp } from '../support/console-client.ts'
import { describeForBackends, startTestServer, type TestServer } from '../support/harness.ts'
import { sendMail, simpleMessage } from '../support/smtp.ts'

const clock = new ManualClock('2026-11-25T14:30:00.000Z')
let server: TestServer
let owner: ConsoleClient
let org: string
let key: string
let a: { id: string; address: string }
let b: { id: string; address: string }

/** A multipart message: a text or HTML body and one part with the given disposition. */
function withPart(fields: {
  to: string
  subject: string
  body: string
  html?: boolean
  disposition: 'attachment' | 'inline'
}): string {
  return [
    'From: Shop <orders@shop.example>',
    `To: ${fields.to}`,
    `Subject: ${fields.subject}`,
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="b1"',
    '',
    '--b1',
    `Content-Type: text/${fields.html ? 'html' : 'plain'}; charset=utf-8`,
    '',
    fields.body,
    '--b1',
    'Content-Type: image/png',
    `Content-Disposition: ${fields.disposition}; filename="logo.png"`,
    'Content-ID: <logo@shop.example>',
    'Content-Transfer-Encoding: base64',
    '',
    'iVBORw0KGgo=',
    '--b1--',
    '',
  ].join('\r\n')
}

async function send(to: string, raw: string) {
  const result = await sendMail(server.app.smtpPort, { to: [to] }, raw)
  expect(result.data?.code, JSON.stringify(result)).toBe(250)
  clock.advance(1000)
}

const subjectsOf = (html: string) =>
  [...html.matchAll(/href="[^"]*\/messages\/msg_[0-9a-f]+">([^<]*)<\/a>/g)].map((m) => m[1])

beforeAll(async () => {
  server = await startTestServer({ clock })
  // Local: no quotas, so paging can have 51 messages in one inbox within five minutes.
  ;({ client: owner, organizationId: org, key } = await setUp(server, { email: 'owner@example.com', preset: 'local' }))
  a = (await server.post('/v1/inboxes', key)).body.data
  b = (await server.post('/v1/inboxes', key)).body.data
  // 14:30:00, :01, :02, :03, :04 (the clock steps a second after each).
  await send(
    a.address,
    simpleMessage({ to: a.address, subject: 'Order shipped', text: 'Your tracking code is\r\nZX-42%_\\ok, see you.' }),
  )
  await send(
    a.address,
    withPart({
      to: a.address,
      subject: 'Welcome',
      body: '<p>Please <b>VERIFY</b> your e-mail</p>',
      html: true,
      disposition: 'attachment',
    }),
  )
  await send(
    b.address,
    withPart({ to: b.address, subject: 'Invoice', body: 'Nothing to see.', disposition: 'attachment' }),
  )
  await send(
    a.address,
    withPart({
      to: a.address,
      subject: 'Newsletter',
      body: '<img src="cid:logo@shop.example">',
      html: true,
      disposition: 'inline',
    }),
  )
  await send(
    a.address,
    simpleMessage({ to: a.address, subject: "Robert'); DROP TABLE messages;--", text: 'Große Straße' }),
  )
})
afterAll(() => server.stop())

const inbox = async (id: string, query: string) => owner.get(`/console/orgs/${org}/inboxes/${id}?${query}`)
const search = async (query: string) => owner.get(`/console/orgs/${org}/search?${query}`)

describeForBackends(
  ['sqlite'],
  "it reads SQLite's own query plans of the SQLite adapter",
  "the SQLite adapter's search plans",
  () => {
    test("each filter's query reads an index, or a bounded window of one, never a scan of a table", () => {
      const db = new Database(server.databasePath, { readonly: true })
      const planOf = ({ sql, params }: { sql: string; params: unknown[] }) =>
        (db.query(`EXPLAIN QUERY PLAN ${sql}`).all(...(params as string[])) as { detail: string }[])
          .map((row) => row.detail)
          .join('\n')
      const noScan = (plan: string) =>
        expect(plan).not.toMatch(/SCAN (messages|message_search_texts|attachments)\b(?! USING)/)
      const sdb = server.app.storage!.db

      const text = listingSql(sdb, { text: true }, TEXT_SEARCH_WINDOW)
      expect(text.params).toContain(TEXT_SEARCH_WINDOW)
      expect(planOf(text)).toContain(
        'SEARCH message_search_texts USING INDEX sqlite_autoindex_message_search_texts_1 (message_id=?)',
      )
      expect(planOf(text)).toContain('LIST SUBQUERY')
      noScan(planOf(text))
      const attachment = planOf(listingSql(sdb, { hasAttachment: true }, TEXT_SEARCH_WINDOW))
      expect(attachment).toContain('SEARCH attachments EXISTS USING INDEX attachments_by_message (message_id=?)')
      noScan(attachment)
      const range = planOf(listingSql(sdb, { receivedAfter: true, receivedBefore: true }, TEXT_SEARCH_WINDOW))
      expect(range).toContain('messages_by_inbox_newest (inbox_id=? AND received_at>? AND received_at<?)')
      const until = planOf(listingSql(sdb, { receivedBefore: true }, TEXT_SEARCH_WINDOW))
      expect(until).toContain('messages_by_inbox_newest (inbox_id=? AND received_at<?)')
      const recipient = planOf(listingSql(sdb, { recipient: true }, TEXT_SEARCH_WINDOW))
      expect(recipient).toContain('messages_by_inbox_newest (inbox_id=?)')
      noScan(recipient)

      for (const query of [
        { text: 'x' },
        { hasAttachment: true },
        { recipient: 'x' },
        { receivedAfter: 0, receivedBefore: 1 },
        { text: 'x', hasAttachment: true, recipient: 'x', receivedBefore: 1 },
      ]) {
        const sql = searchSelect(sdb, {
          organizationId: org,
          now: isoTime(clock.now()),
          filters: storedFilters(query),
          window: searchWindow(query),
          limit: 50,
        }).toSQL()
        const plan = planOf(sql)
        expect(plan).toContain('messages_by_organization_newest (organization_id=?)')
        noScan(plan)
        expect(sql.params).toContain('text' in query ? TEXT_SEARCH_WINDOW : 5000)
      }
      db.close()
    })
  },
)

test('text contains: subject or body, any case, white space folded, HTML without its tags', async () => {
  expect(subjectsOf((await inbox(a.id, 'text=TRACKING+code+is+zx')).html)).toEqual(['Order shipped'])
  expect(subjectsOf((await inbox(a.id, 'text=verify+your')).html)).toEqual(['Welcome'])
  expect(subjectsOf((await inbox(a.id, 'text=order')).html)).toEqual(['Order shipped'])
  expect(subjectsOf((await inbox(a.id, `text=${encodeURIComponent('große')}`)).html)).toHaveLength(1)
  expect(subjectsOf((await inbox(a.id, 'text=nowhere')).html)).toEqual([])
  const page = await inbox(a.id, 'text=order')
  expect(page.html).toContain(`newest ${TEXT_SEARCH_WINDOW.toLocaleString('en')} messages`)
})

test('wildcards and quotes are plain characters', async () => {
  for (const literal of ['%', '_', '\\', '42%_\\'])
    expect(subjectsOf((await inbox(a.id, `text=${encodeURIComponent(literal)}`)).html)).toEqual(['Order shipped'])
  const quoted = await search(`subject=${encodeURIComponent("'); DROP TABLE")}`)
  expect(quoted.status).toBe(200)
  expect(subjectsOf(quoted.html)).toHaveLength(1)
  expect(subjectsOf((await search(`subject=${encodeURIComponent("' OR 1=1 --")}`)).html)).toEqual([])
})

test('has attachment counts attachments proper, not an inline image', async () => {
  expect(subjectsOf((await inbox(a.id, 'attachment=yes')).html)).toEqual(['Welcome'])
  expect(subjectsOf((await search('attachment=yes')).html)).toEqual(['Invoice', 'Welcome'])
})

test('recipient and the date range, to the second and inclusive, across inboxes', async () => {
  expect(subjectsOf((await search(`to=${encodeURIComponent(b.address.slice(0, 12).toUpperCase())}`)).html)).toEqual([
    'Invoice',
  ])
  // 14:30:01 through 14:30:02 inclusive: the second and third message.
  expect(subjectsOf((await search('since=2026-11-25+14:30:01&until=2026-11-25+14:30:02')).html)).toEqual([
    'Invoice',
    'Welcome',
  ])
  expect(subjectsOf((await search('since=2026-11-25T14:30:03Z&until=2026-11-25')).html)).toEqual([
    "Robert'); DROP TABLE messages;--",
    'Newsletter',
  ])
  expect(subjectsOf((await search('until=2026-11-25+14:30')).html)).toHaveLength(5)
  expect(subjectsOf((await search('until=2026-11-24')).html)).toEqual([])
  // Combined, ANDed.
  expect(
    subjectsOf((await search(`attachment=yes&to=${encodeURIComponent(a.address)}&until=2026-11-25+14:30:01`)).html),
  ).toEqual(['Welcome'])
  expect(
    subjectsOf((await search(`attachment=yes&to=${encodeURIComponent(a.address)}&until=2026-11-25+14:30:00`)).html),
  ).toEqual([])
  expect(subjectsOf((await inbox(a.id, 'since=2026-11-25+14:30:01&until=2026-11-25+14:30:03&text=e')).html)).toEqual([
    'Newsletter',
    'Welcome',
  ])
})

test('hostile values are a 400 with a message on the page, never a 500', async () => {
  const cases: Array<[string, string]> = [
    [`subject=${'x'.repeat(201)}`, 'Subject contains: at most 200 characters.'],
    [`text=${'x'.repeat(101)}`, 'Text contains: at most 100 characters.'],
    [`text=${'x'.repeat(4000)}`, 'Text contains: at most 100 characters.'],
    [`to=${'x'.repeat(321)}`, 'To: at most 320 characters.'],
    ['text=a%00b', 'Text contains: control characters cannot be searched for.'],
    ['subject=a%1Bb', 'Subject contains: control characters cannot be searched for.'],
    ['text=a%E2%80%AEb', 'Text contains: control characters cannot be searched for.'],
    ['since=2026-02-30', 'Received since: a date'],
    ['until=2026-11-25+25:00', 'Received until: a date'],
    ['until=tomorrow', 'Received until: a date'],
    ['since=2026-11-25+14:30:05&until=2026-11-25+14:30:04', 'Received until is before received since'],
    ['since=2026-11-26&until=2026-11-25', 'Received until is before received since'],
    ['attachment=1', 'Has attachment: tick the box'],
  ]
  for (const [query, message] of cases) {
    for (const page of [await search(query), await inbox(a.id, query)]) {
      expect(page.status).toBe(400)
      expect(page.html).toContain(message)
      expect(subjectsOf(page.html)).toEqual([])
    }
  }
  // Echoed into the form cut short, so a long value cannot bloat the page.
  const echoed = await search(`text=${'x'.repeat(4000)}`)
  expect(echoed.html).not.toContain('x'.repeat(1001))
})

test('the URL carries the filters and paging keeps them', async () => {
  const filter = {
    ...emptyFilter,
    subject: 'a b',
    from: '@shop.example',
    to: 'x',
    text: '50% & more',
    attachment: 'yes',
    since: '2026-11-25 14:30',
    until: '2026-11-25 18:00:59',
  }
  const href = filterHref('/p', filter, 'c1')
  expect(readInboxFilter(new URL(href, 'http://h'))).toEqual({ ...filter, cursor: 'c1' })
  expect(toMessageQuery(filter, 50)).toMatchObject({
    text: '50% & more',
    hasAttachment: true,
    receivedAfter: Date.parse('2026-11-25T14:30:00Z'),
    receivedBefore: Date.parse('2026-11-25T18:01:00Z'),
  })

  // Fifty-one matches in inbox b: the first page links to the second with every filter kept.
  for (let i = 0; i < 51; i++)
    await send(b.address, simpleMessage({ to: b.address, subject: `Code ${i}`, text: 'your code' }))
  const first = await inbox(b.id, 'text=CODE&since=2026-11-25+14:30:05')
  expect(subjectsOf(first.html)).toHaveLength(50)
  const older = /id="older-messages"|href="([^"]+)" id="older-messages"/.exec(first.html)
  expect(older?.[1]).toBeDefined()
  const next = older![1]!.replaceAll('&amp;', '&')
  expect(next).toContain('text=CODE')
  expect(next).toContain('since=2026-11-25+14%3A30%3A05')
  const second = await owner.get(next)
  expect(second.status).toBe(200)
  expect(subjectsOf(second.html)).toHaveLength(1)

  // The same across inboxes: "Older matches" keeps the filters and shows the one left.
  const firstMatches = await search('text=CODE&since=2026-11-25+14:30:05')
  expect(subjectsOf(firstMatches.html)).toHaveLength(50)
  const olderMatches = /href="([^"]+)" id="older-matches"/.exec(firstMatches.html)![1]!.replaceAll('&amp;', '&')
  expect(olderMatches).toContain('text=CODE')
  expect(olderMatches).toContain('since=2026-11-25+14%3A30%3A05')
  const lastMatches = await owner.get(olderMatches)
  expect(subjectsOf(lastMatches.html)).toEqual(['Code 0'])
  expect(lastMatches.html).not.toContain('id="older-matches"')
  expect((await search('text=CODE&cursor=forged')).status).toBe(400)
  // A cursor of one inbox's list is not one of the search's.
  const inboxCursor = new URL(next, server.url).searchParams.get('cursor')!
  expect((await search(`text=CODE&cursor=${encodeURIComponent(inboxCursor)}`)).status).toBe(400)
})

test('the searched text is bounded: a 1 MB body keeps its first TEXT_SEARCH_CHARS characters', async () => {
  const c = (await server.post('/v1/inboxes', key)).body.data
  await send(
    c.address,
    simpleMessage({
      to: c.address,
      subject: 'Long',
      text: `early ${'a'.repeat(TEXT_SEARCH_CHARS)} late ${'b'.repeat(1_000_000)}`,
    }),
  )
  const lengths = await server.query(
    'select length(t.text) as n from message_search_texts t join messages m on m.id = t.message_id where m.inbox_id = ?',
    c.id,
  )
  expect(lengths.map((row) => Number(row.n))).toEqual([TEXT_SEARCH_CHARS])
  expect(subjectsOf((await inbox(c.id, 'text=early')).html)).toEqual(['Long'])
  expect(subjectsOf((await inbox(c.id, 'text=late')).html)).toEqual([])
})

test('the search line names each operator apart, as typed', async () => {
  const page = await search('')
  expect(page.status).toBe(200)
  // Markup gone, as a reader sees it: adjacent <code> elements with no space between them read
  // as one word (before:after:).
  const help = page.html.match(/<p class="muted operators"[^>]*>([\s\S]*?)<\/p>/)![1]!.replace(/<[^>]+>/g, '')
  const operators = help.split(/[\s,()]+/).filter((word) => word.includes(':'))
  expect(operators).toEqual([
    'from:',
    'to:',
    'subject:',
    'has:attachment',
    'is:unread',
    'is:read',
    'before:',
    'after:',
    'larger:',
    'smaller:',
  ])
})
