/**
 * The console's search and live list as an attacker sees them, over loopback: a member of
 * organisation A with organisation B's ids and cursors, a removed member, no session, the
 * live-list header where it means nothing; and the search text written at ingest, which
 * odd mail cannot turn into a refused `250` and which goes with its message.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { CONSOLE_ROUTES } from '../../src/console/index.ts'
import { TEXT_SEARCH_WINDOW } from '../../src/core/messages/search-filters.ts'
import { SEARCH_WINDOW, searchWindow } from '../../src/core/messages/search-organization.ts'
import { addMember, type ConsoleClient, setUp } from '../support/console-client.ts'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { sendMail, simpleMessage } from '../support/smtp.ts'

let server: TestServer
let operator: ConsoleClient
let member: ConsoleClient
let orgA: string
let orgB: string
let inboxB: string
let messageB: string

const subjectsOf = (html: string) =>
  [...html.matchAll(/href="[^"]*\/messages\/msg_[0-9a-f]+">([^<]*)<\/a>/g)].map((m) => m[1])

async function send(to: string, raw: string | Buffer) {
  const result = await sendMail(server.app.smtpPort, { to: [to] }, raw)
  expect(result.data?.code, JSON.stringify(result)).toBe(250)
}

/** An inbox made through the console; returns its id and address. */
async function inbox(client: ConsoleClient, org: string, prefix: string) {
  await client.get(`/console/orgs/${org}/inboxes`)
  const made = await client.post(`/console/orgs/${org}/inboxes`, { prefix })
  const id = /inboxes\/(inbox_[0-9a-f]{32})$/.exec(made.location ?? '')?.[1]
  if (!id) throw new Error(`inbox not made: ${made.status}`)
  return { id, address: `${prefix}@inbox.test` }
}

/** Search-text rows of the messages `where` picks, read from the database behind the server's back. */
function searchTextRows(where: string, ...values: string[]): Promise<number> {
  return server.countRows(
    `select count(*) as n from message_search_texts t join messages m on m.id = t.message_id where ${where}`,
    ...values,
  )
}

function orphanSearchTexts(): Promise<number> {
  return server.countRows(
    'select count(*) as n from message_search_texts t where not exists (select 1 from messages m where m.id = t.message_id)',
  )
}

beforeAll(async () => {
  server = await startTestServer()
  ;({ client: operator, organizationId: orgA } = await setUp(server, {
    email: 'operator@example.com',
    preset: 'local',
  }))
  member = await addMember(server, operator, orgA, 'member@example.com')
  // Organisation B: the operator's, not the member's.
  const created = await operator.post('/console/admin/orgs', { name: 'Org B', preset: 'local' })
  orgB = /orgs\/(org_[0-9a-f]{32})/.exec(created.location!)![1]!
  const b = await inbox(operator, orgB, 'secret-b')
  inboxB = b.id
  await send(b.address, simpleMessage({ to: b.address, subject: 'B secret', text: 'the launch code is 0000' }))
  messageB = /\/messages\/(msg_[0-9a-f]{32})/.exec(
    (await operator.get(`/console/orgs/${orgB}/inboxes/${inboxB}`)).html,
  )![1]!
})
afterAll(() => server.stop())

test("a member of A with B's ids gets 404 from the search, the live list and every read", async () => {
  await member.get(`/console/orgs/${orgA}/inboxes`)
  expect((await member.get(`/console/orgs/${orgB}/search?text=launch`)).status).toBe(404)
  const live = await member.get(`/console/orgs/${orgB}/inboxes/${inboxB}`, { 'x-live-list': '1' })
  expect(live.status).toBe(404)
  expect(live.headers.get('x-live-list')).toBeNull()
  expect(live.html).not.toContain('B secret')
  // B's inbox under A's organisation in the path: the path's organisation decides, and B's inbox is not in it.
  const crossed = await member.get(`/console/orgs/${orgA}/inboxes/${inboxB}`, { 'x-live-list': '1' })
  expect(crossed.status).toBe(404)
  expect(crossed.html).not.toContain('B secret')
  expect((await member.get(`/console/orgs/${orgA}/messages/${messageB}`)).status).toBe(404)
  // A's search never reaches B's mail, whatever it looks for.
  for (const query of ['text=launch', 'to=secret-b', 'subject=b+secret', 'from=@example.com']) {
    const page = await member.get(`/console/orgs/${orgA}/search?${query}`)
    expect(page.status).toBe(200)
    expect(page.html).not.toContain('B secret')
  }
  // B's inbox and message ids in A's forms change nothing.
  await member.get(`/console/orgs/${orgA}/inboxes`)
  expect((await member.post(`/console/orgs/${orgA}/inboxes/delete-inbox`, { inbox: inboxB })).status).toBe(404)
  const a = await inbox(member, orgA, 'member-a')
  await member.get(`/console/orgs/${orgA}/inboxes/${a.id}`)
  expect(
    (await member.post(`/console/orgs/${orgA}/inboxes/${a.id}/delete-message`, { message: messageB })).status,
  ).toBe(404)
  expect(subjectsOf((await operator.get(`/console/orgs/${orgB}/inboxes/${inboxB}`)).html)).toEqual(['B secret'])
})

test("a search cursor is B's alone: replayed in A's search it is refused", async () => {
  const b = await inbox(operator, orgB, 'paging-b')
  for (let i = 0; i < 51; i++)
    await send(b.address, simpleMessage({ to: b.address, subject: `Page ${i}`, text: 'paged' }))
  const first = await operator.get(`/console/orgs/${orgB}/search?text=paged`)
  const older = /href="([^"]+)" id="older-matches"/.exec(first.html)![1]!.replaceAll('&amp;', '&')
  const cursor = new URL(older, server.url).searchParams.get('cursor')!
  // The operator is a member of both: the cursor is bound to the organisation, not the person.
  const replayed = await operator.get(`/console/orgs/${orgA}/search?text=paged&cursor=${encodeURIComponent(cursor)}`)
  expect(replayed.status).toBe(400)
  expect(replayed.html).not.toContain('Page ')
  // Nor is it a cursor of one of B's inboxes.
  expect(
    (await operator.get(`/console/orgs/${orgB}/inboxes/${b.id}?cursor=${encodeURIComponent(cursor)}`)).status,
  ).toBe(400)
  // A tampered cursor is refused, not read.
  const tampered = `${cursor.slice(0, -2)}${cursor.endsWith('A') ? 'B' : 'A'}A`
  expect(
    (await operator.get(`/console/orgs/${orgB}/search?text=paged&cursor=${encodeURIComponent(tampered)}`)).status,
  ).toBe(400)
})

test('the live-list header: without a session a redirect with no marker; elsewhere the whole page', async () => {
  const anonymous = await fetch(`${server.url}/console/orgs/${orgA}/inboxes`, {
    headers: { 'x-live-list': '1' },
    redirect: 'manual',
  })
  expect(anonymous.status).toBe(303)
  expect(anonymous.headers.get('x-live-list')).toBeNull()
  expect(anonymous.headers.get('cache-control')).toBe('no-store')
  const followed = await fetch(`${server.url}/console/orgs/${orgB}/inboxes/${inboxB}`, {
    headers: { 'x-live-list': '1' },
  })
  expect(followed.headers.get('x-live-list')).toBeNull()
  expect(await followed.text()).not.toContain('B secret')
  for (const path of [
    `/console/orgs/${orgB}/search?text=launch`,
    `/console/orgs/${orgB}/inboxes`,
    `/console/orgs/${orgB}/messages/${messageB}`,
  ]) {
    const page = await operator.get(path, { 'x-live-list': '1' })
    expect(page.status).toBe(200)
    expect(page.headers.get('x-live-list')).toBeNull()
    expect(page.html).toContain('<html')
  }
  // The list alone is never kept by a cache, so a later navigation cannot be answered with it.
  const list = await operator.get(`/console/orgs/${orgB}/inboxes/${inboxB}`, { 'x-live-list': '1' })
  expect(list.headers.get('x-live-list')).toBe('1')
  expect(list.headers.get('cache-control')).toBe('no-store')
})

test('a removed member loses the live list and the search at once; so does a signed-out session', async () => {
  const leaver = await addMember(server, operator, orgB, 'leaver@example.com')
  expect((await leaver.get(`/console/orgs/${orgB}/search?text=launch`)).html).toContain('B secret')
  const userId = /\/members\/(user_[0-9a-f]{32})\/remove/.exec(
    (await operator.get(`/console/orgs/${orgB}/members`)).html.split('leaver@example.com')[1] ?? '',
  )?.[1]
  const members = await operator.get(`/console/orgs/${orgB}/members`)
  const id =
    userId ??
    [...members.html.matchAll(/\/members\/(user_[0-9a-f]{32})\/remove/g)]
      .map((m) => m[1]!)
      .find((u) => members.html.indexOf(u) > members.html.indexOf('leaver@example.com'))!
  expect((await operator.post(`/console/orgs/${orgB}/members/${id}/remove`)).status).toBe(303)
  expect((await leaver.get(`/console/orgs/${orgB}/search?text=launch`)).status).toBe(404)
  const live = await leaver.get(`/console/orgs/${orgB}/inboxes/${inboxB}`, { 'x-live-list': '1' })
  expect(live.status).toBe(404)
  expect(live.html).not.toContain('B secret')

  const signedOut = await addMember(server, operator, orgB, 'signed-out@example.com')
  await signedOut.get(`/console/orgs/${orgB}`)
  const cookie = signedOut.cookieHeader()
  expect((await signedOut.post('/console/sign-out')).status).toBe(303)
  // The old cookie, replayed after signing out, is a stranger's.
  const replay = await fetch(`${server.url}/console/orgs/${orgB}/inboxes/${inboxB}`, {
    headers: { cookie, 'x-live-list': '1' },
    redirect: 'manual',
  })
  expect(replay.status).toBe(303)
  expect(await replay.text()).not.toContain('B secret')
  const search = await fetch(`${server.url}/console/orgs/${orgB}/search?text=launch`, {
    headers: { cookie },
    redirect: 'manual',
  })
  expect(search.status).toBe(303)
})

test('odd mail is stored with a search text and a 250: HTML only, no text part, invalid UTF-8, NUL, a huge body', async () => {
  const c = await inbox(operator, orgA, 'odd-mail')
  const head = (subject: string, type: string) =>
    [
      `From: s@example.com`,
      `To: ${c.address}`,
      `Subject: ${subject}`,
      'MIME-Version: 1.0',
      `Content-Type: ${type}`,
      '',
    ].join('\r\n')
  await send(
    c.address,
    `${head('html only', 'text/html; charset=utf-8')}\r\n<p>Only <b>MARKUP</b> here</p>${'<div>x</div>'.repeat(80_000)}`,
  )
  await send(
    c.address,
    `${head('attachment only', 'multipart/mixed; boundary=b')}\r\n--b\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=a.bin\r\n\r\nAAAA\r\n--b--\r\n`,
  )
  await send(
    c.address,
    Buffer.concat([
      Buffer.from(`${head('bad utf8', 'text/plain; charset=utf-8')}\r\nbefore `),
      Buffer.from([0xff, 0xfe, 0xc3, 0x28, 0xed, 0xa0, 0x80]),
      Buffer.from(' after\r\n'),
    ]),
  )
  await send(c.address, `${head('nul', 'text/plain; charset=utf-8')}\r\nnul\u0000inside\r\n`)
  await send(c.address, `${head('unknown charset', 'text/plain; charset=x-made-up')}\r\nplain words\r\n`)
  await send(c.address, `${head('huge', 'text/plain; charset=utf-8')}\r\n${'İ'.repeat(400_000)}\r\n`)
  expect(await searchTextRows('m.to_address = ?', c.address)).toBe(6)
  const find = async (text: string) =>
    subjectsOf((await operator.get(`/console/orgs/${orgA}/inboxes/${c.id}?text=${encodeURIComponent(text)}`)).html)
  expect(await find('only markup here')).toEqual(['html only'])
  expect(await find('before')).toEqual(['bad utf8'])
  expect(await find('plain words')).toEqual(['unknown charset'])
  expect(await find('İİ')).toEqual(['huge'])
})

test('deleting a message or an inbox, in the console or over /v1, deletes its search text', async () => {
  const d = await inbox(operator, orgA, 'deleting')
  for (const subject of ['one', 'two', 'three'])
    await send(d.address, simpleMessage({ to: d.address, subject, text: `body ${subject}` }))
  expect(await searchTextRows('m.inbox_id = ?', d.id)).toBe(3)
  const page = await operator.get(`/console/orgs/${orgA}/inboxes/${d.id}`)
  const ids = [...page.html.matchAll(/\/messages\/(msg_[0-9a-f]{32})/g)].map((m) => m[1]!)
  expect((await operator.post(`/console/orgs/${orgA}/messages/${ids[0]}/delete`)).status).toBe(303)
  expect(await searchTextRows('m.inbox_id = ?', d.id)).toBe(2)
  expect(await orphanSearchTexts()).toBe(0)
  await operator.get(`/console/orgs/${orgA}/inboxes/${d.id}`)
  expect((await operator.post(`/console/orgs/${orgA}/inboxes/${d.id}/delete`)).status).toBe(303)
  expect(await orphanSearchTexts()).toBe(0)
  expect(await searchTextRows('m.inbox_id = ?', d.id)).toBe(0)
  expect(subjectsOf((await operator.get(`/console/orgs/${orgA}/search?text=body`)).html)).toEqual([])
})

test('text contains finds a subject whose white space differs from the query, as it finds a body', async () => {
  const e = await inbox(operator, orgA, 'spacing')
  // A long subject folded onto a second line keeps the tab; a template leaves two spaces.
  await send(e.address, simpleMessage({ to: e.address, subject: 'Your order has\r\n\tshipped', text: 'nothing here' }))
  await send(e.address, simpleMessage({ to: e.address, subject: 'Invoice  ready', text: 'nothing here' }))
  await send(e.address, simpleMessage({ to: e.address, subject: 'Other', text: 'Your order has\r\n\tshipped' }))
  const find = async (text: string) =>
    subjectsOf((await operator.get(`/console/orgs/${orgA}/inboxes/${e.id}?text=${encodeURIComponent(text)}`)).html)
      .length
  expect(await find('order has shipped')).toBe(2)
  expect(await find('invoice ready')).toBe(1)
  // The folded subject and the body are apart: a query spanning the two finds nothing.
  expect(await find('ready nothing')).toBe(0)
  expect(await find('shipped nothing')).toBe(0)
})

test("a query's cost is bounded in bytes: three-byte letters cannot triple the worst search", async () => {
  // instr() compares up to the query's UTF-8 length at each position of each stored text.
  const cases: Array<[string, string]> = [
    [`text=${encodeURIComponent('ꙮ'.repeat(40))}`, 'Text contains: at most 100 bytes of UTF-8'],
    // İ lowercases to two characters: the folded query is what is bounded.
    [`text=${encodeURIComponent('İ'.repeat(40))}`, 'Text contains: at most 100 bytes of UTF-8'],
    [`subject=${encodeURIComponent('ꙮ'.repeat(100))}`, 'Subject contains: at most 200 bytes of UTF-8'],
  ]
  for (const [query, message] of cases) {
    for (const path of [`/console/orgs/${orgA}/search?${query}`, `/console/orgs/${orgB}/inboxes/${inboxB}?${query}`]) {
      const page = await operator.get(path)
      expect(page.status).toBe(400)
      expect(page.html).toContain(message)
    }
  }
  // Within the bounds: 33 three-byte letters, 100 ASCII ones.
  expect((await operator.get(`/console/orgs/${orgA}/search?text=${encodeURIComponent('ꙮ'.repeat(33))}`)).status).toBe(
    200,
  )
  expect((await operator.get(`/console/orgs/${orgA}/search?text=${'a'.repeat(100)}`)).status).toBe(200)
})

test('a subject search across inboxes looks through the smaller window, as a text search does', () => {
  expect(searchWindow({ subject: 'x' })).toBe(TEXT_SEARCH_WINDOW)
  expect(searchWindow({ text: 'x' })).toBe(TEXT_SEARCH_WINDOW)
  expect(searchWindow({ recipient: 'x' })).toBe(SEARCH_WINDOW)
})

test('a plain member gets 403 from every owner route, and nothing changes', async () => {
  const owned = CONSOLE_ROUTES.filter((r) => r.access === 'owner')
  expect(owned.length).toBeGreaterThan(0)
  const members = await operator.get(`/console/orgs/${orgA}/members`)
  const operatorId = /\/members\/(user_[0-9a-f]{32})\//.exec(members.html)![1]!
  const keys = await operator.get(`/console/orgs/${orgA}/keys`)
  const values: Record<string, string> = {
    org: orgA,
    user: operatorId,
    key: /data-key="([0-9a-f]{16})"/.exec(keys.html)![1]!,
    invite: 'invite_x',
  }
  await member.get(`/console/orgs/${orgA}`)
  for (const r of owned) {
    const path = r.path.replace(/:([a-z]+)/g, (_, name: string) => encodeURIComponent(values[name] ?? `x_${name}`))
    const page = r.method === 'GET' ? await member.get(path) : await member.post(path, { role: 'member', name: 'x' })
    expect(`${r.method} ${r.path} ${page.status}`).toBe(`${r.method} ${r.path} 403`)
  }
  // The operator is still an owner, and the key still listed.
  expect((await operator.get(`/console/orgs/${orgA}/members`)).html).toContain(operatorId)
  expect((await operator.get(`/console/orgs/${orgA}/keys`)).html).toContain(values.key!)
})
