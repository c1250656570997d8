/**
 * listOrWaitForMessages without waiting: each filter alone and combined (AND), summaries
 * versus include=content, newest first, and cursor paging. A ManualClock makes every
 * received_at exact, so the received_after boundary is checked to the millisecond.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ManualClock, isoTime } from '../../src/clock.ts'
import type { TestServer, Tenant } from '../support/harness.ts'
import { simpleMessage } from '../support/smtp.ts'
import { CONTENT_FIELDS, SUMMARY_FIELDS, deliver, newInbox, sortedKeys, startRoomyServer } from '../support/messages.ts'

const T0 = Date.parse('2026-03-10T08:00:00.000Z')
const clock = new ManualClock(T0)
let server: TestServer
let tenant: Tenant
let inbox: { id: string; address: string }
/** name → message id, in the order sent (one second apart). */
const ids = {} as Record<string, string> & { digest: string; code1: string }

// Sent one second apart, in this order.
const MAIL = [
  { name: 'code1', from: 'Alice <alice@example.com>', subject: 'Your Code is 1234' },
  {
    name: 'reset',
    from: 'bob@Sub.Example.com',
    subject: '=?UTF-8?B?' + Buffer.from('Réinitialiser le MOT de passe').toString('base64') + '?=',
  },
  { name: 'digest', from: '"Alice Upper" <ALICE@EXAMPLE.COM>', subject: 'Weekly digest' },
  { name: 'code2', from: 'carol@other.org', subject: 'your code is 5678' },
  { name: 'lookalike', from: 'mallory@notexample.com', subject: 'Überweisung ÄRGER' },
]

beforeAll(async () => {
  server = await startRoomyServer({ clock })
  tenant = await server.tenant()
  inbox = await newInbox(server, tenant.key)
  for (const [i, mail] of MAIL.entries()) {
    clock.set(T0 + i * 1000)
    const [id] = await deliver(
      server,
      inbox.address,
      simpleMessage({ to: inbox.address, from: mail.from, subject: mail.subject }),
    )
    ids[mail.name] = id!
  }
})
afterAll(() => server.stop())

const list = (query: string) => server.get(`/v1/inboxes/${inbox.id}/messages?${query}`, tenant.key)
/** The names of the listed messages, in listed order. */
async function names(query: string): Promise<string[]> {
  const response = await list(query)
  expect({ query, status: response.status }).toEqual({ query, status: 200 })
  const byId = Object.fromEntries(Object.entries(ids).map(([name, id]) => [id, name]))
  return response.body.data.map((m: { id: string }) => byId[m.id] ?? m.id)
}

describe('filters', () => {
  test('no filter: every message, newest first', async () => {
    expect(await names('')).toEqual(['lookalike', 'code2', 'digest', 'reset', 'code1'])
  })
  test('subject: case-insensitive substring, also beyond ASCII', async () => {
    expect(await names('subject=code')).toEqual(['code2', 'code1'])
    expect(await names('subject=CODE%20IS')).toEqual(['code2', 'code1'])
    expect(await names(`subject=${encodeURIComponent('réinitialiser')}`)).toEqual(['reset'])
    expect(await names(`subject=${encodeURIComponent('RÉINIT')}`)).toEqual(['reset'])
    expect(await names(`subject=${encodeURIComponent('mot de')}`)).toEqual(['reset'])
    expect(await names(`subject=${encodeURIComponent('äRGER')}`)).toEqual(['lookalike'])
    expect(await names('subject=1234')).toEqual(['code1'])
    // Not a pattern language: % and _ are literal characters.
    expect(await names('subject=%25')).toEqual([])
    expect(await names('subject=_')).toEqual([])
  })
  test('sender: exact address, case-insensitive', async () => {
    expect(await names('sender=alice@example.com')).toEqual(['digest', 'code1'])
    expect(await names('sender=ALICE@Example.COM')).toEqual(['digest', 'code1'])
    expect(await names('sender=lice@example.com')).toEqual([])
    expect(await names('sender=alice@example.co')).toEqual([])
  })
  test('sender_domain: exact domain, case-insensitive; subdomains and lookalikes do not match', async () => {
    expect(await names('sender_domain=example.com')).toEqual(['digest', 'code1'])
    expect(await names('sender_domain=EXAMPLE.com')).toEqual(['digest', 'code1'])
    expect(await names('sender_domain=sub.example.com')).toEqual(['reset'])
    expect(await names('sender_domain=ample.com')).toEqual([])
    expect(await names('sender_domain=com')).toEqual([])
  })
  test('received_after: at or after the instant, to the millisecond', async () => {
    expect(await names(`received_after=${isoTime(T0 + 2000)}`)).toEqual(['lookalike', 'code2', 'digest'])
    expect(await names(`received_after=${isoTime(T0 + 2001)}`)).toEqual(['lookalike', 'code2'])
    expect(await names(`received_after=${isoTime(T0 + 1999)}`)).toEqual(['lookalike', 'code2', 'digest'])
    // The same instant written with an offset, with a lowercase z, and with sub-millisecond digits.
    expect(await names(`received_after=${encodeURIComponent('2026-03-10T10:00:02+02:00')}`)).toEqual([
      'lookalike',
      'code2',
      'digest',
    ])
    expect(await names('received_after=2026-03-10t08:00:02z')).toEqual(['lookalike', 'code2', 'digest'])
    expect(await names('received_after=2026-03-10T08:00:02.000000Z')).toEqual(['lookalike', 'code2', 'digest'])
    // 2 s plus 100 ns is after the message received at exactly 2 s.
    expect(await names('received_after=2026-03-10T08:00:02.0000001Z')).toEqual(['lookalike', 'code2'])
    expect(await names(`received_after=${isoTime(T0 + 5000)}`)).toEqual([])
    expect(await names('received_after=2000-01-01T00:00:00Z')).toHaveLength(5)
  })
  test('filters combine with AND', async () => {
    expect(await names('subject=code&sender_domain=example.com')).toEqual(['code1'])
    expect(await names(`subject=code&received_after=${isoTime(T0 + 1000)}`)).toEqual(['code2'])
    expect(await names('sender=alice@example.com&subject=digest')).toEqual(['digest'])
    expect(await names('sender=alice@example.com&sender_domain=example.com&subject=your')).toEqual(['code1'])
    expect(await names('sender=alice@example.com&sender_domain=other.org')).toEqual([])
    expect(await names(`sender_domain=example.com&received_after=${isoTime(T0 + 2000)}&limit=1`)).toEqual(['digest'])
  })
  test('a non-waiting request without a match answers 200 with an empty page', async () => {
    const response = await list('subject=no-such-subject')
    expect(response.status).toBe(200)
    expect(response.body).toEqual({ data: [], next_cursor: null })
  })
  test('unknown query parameters are ignored', async () => {
    expect(await names('subjekt=code&foo=bar')).toHaveLength(5)
  })
})

describe('fields', () => {
  test('summaries carry exactly the summary fields, with exact timestamps', async () => {
    const response = await list('sender=carol@other.org')
    const [item] = response.body.data
    expect(sortedKeys(item)).toEqual(SUMMARY_FIELDS)
    expect(item).toEqual({
      id: ids.code2,
      inbox_id: inbox.id,
      from: { name: '', address: 'carol@other.org' },
      to: inbox.address,
      subject: 'your code is 5678',
      preview: 'Hello there',
      size_bytes: expect.any(Number),
      received_at: isoTime(T0 + 3000),
      expires_at: isoTime(T0 + 3000 + 30 * 86_400_000),
    })
  })
  test('include=content adds exactly the content fields, equal to getMessage', async () => {
    const response = await list('include=content&limit=1&subject=digest')
    const [item] = response.body.data
    expect(sortedKeys(item)).toEqual([...SUMMARY_FIELDS, ...CONTENT_FIELDS].sort())
    expect(item.from).toEqual({ name: 'Alice Upper', address: 'ALICE@EXAMPLE.COM' })
    expect(item.text).toBe('Hello there\n') // the line break before the final dot belongs to the message
    expect(item.html).toBeNull()
    expect(item.attachments).toEqual([])
    expect(item.headers.find(([name]: [string, string]) => name.toLowerCase() === 'subject')).toEqual([
      'Subject',
      'Weekly digest',
    ])
    expect(item).toEqual((await server.get(`/v1/messages/${ids.digest}`, tenant.key)).body.data)
  })
  test('include=content pages one message at a time with a cursor', async () => {
    const first = await list('include=content&limit=1')
    expect(first.body.data[0].id).toBe(ids.lookalike)
    const second = await list(`include=content&limit=1&cursor=${encodeURIComponent(first.body.next_cursor)}`)
    expect(second.body.data[0].id).toBe(ids.code2)
    expect(sortedKeys(second.body.data[0])).toEqual([...SUMMARY_FIELDS, ...CONTENT_FIELDS].sort())
  })
})

describe('cursor paging', () => {
  async function pageThrough(query: string): Promise<string[][]> {
    const pages: string[][] = []
    let cursor: string | null = null
    do {
      const response = await list(`${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
      expect(response.status).toBe(200)
      pages.push(response.body.data.map((m: { id: string }) => m.id))
      cursor = response.body.next_cursor
    } while (cursor)
    return pages
  }

  test('pages cover the listing without duplicates or gaps; the last page has next_cursor null', async () => {
    const all = (await list('')).body.data.map((m: { id: string }) => m.id)
    for (const limit of [1, 2, 3, 4, 5]) {
      const pages = await pageThrough(`limit=${limit}`)
      expect(pages.flat()).toEqual(all)
      expect(pages.every((page, i) => page.length === limit || i === pages.length - 1)).toBe(true)
    }
    // A full page that happens to be the last one says so.
    expect((await list('limit=5')).body.next_cursor).toBeNull()
    expect((await list('limit=4')).body.next_cursor).toEqual(expect.any(String))
  })
  test('paging keeps its filters', async () => {
    expect((await pageThrough('limit=1&sender_domain=example.com')).flat()).toEqual([ids.digest, ids.code1])
  })
  test('messages with the same received_at page in a stable order, and arrivals between pages change nothing', async () => {
    const other = await newInbox(server, tenant.key)
    clock.set(T0 + 60_000) // all at one millisecond: the id breaks the tie
    const same: string[] = []
    for (let i = 0; i < 7; i++)
      same.push(...(await deliver(server, other.address, simpleMessage({ to: other.address, subject: `tie ${i}` }))))
    const listOther = (query: string) => server.get(`/v1/inboxes/${other.id}/messages?${query}`, tenant.key)
    const expected = (await listOther('')).body.data.map((m: { id: string }) => m.id)
    expect([...expected].sort()).toEqual([...same].sort())

    const seen: string[] = []
    let cursor: string | null = null
    let arrivals = 0
    do {
      const response = await listOther(`limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
      seen.push(...response.body.data.map((m: { id: string }) => m.id))
      cursor = response.body.next_cursor
      // Newer mail arrives between pages: once at the same millisecond, once later.
      clock.set(T0 + 60_000 + (arrivals === 0 ? 0 : 1000))
      if (arrivals++ < 2)
        await deliver(server, other.address, simpleMessage({ to: other.address, subject: `late ${arrivals}` }))
    } while (cursor)
    expect(new Set(seen).size).toBe(seen.length)
    // The late arrival at the same millisecond may sort after the cursor (its id decides);
    // every original message is seen exactly once, in the original order.
    expect(seen.filter((id) => expected.includes(id))).toEqual(expected)
  })
})
