/**
 * The message list's bulk actions as an attacker sees them: only this inbox's messages of
 * the member's own organisation are touched (another organisation's ids, or another inbox's,
 * are left alone), the token is required, the redirect stays on the inbox whatever `back`
 * says, and opening a message in the console reads it while /v1 reads never do.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { type ConsoleClient, setUp } from '../support/console-client.ts'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { sendMail, simpleMessage } from '../support/smtp.ts'

setDefaultTimeout(30_000)

let server: TestServer
let owner: ConsoleClient
let org: string

async function inbox(client: ConsoleClient, organization: string, prefix: string) {
  await client.get(`/console/orgs/${organization}/inboxes`)
  const made = await client.post(`/console/orgs/${organization}/inboxes`, { prefix })
  const id = /inboxes\/(inbox_[0-9a-f]{32})$/.exec(made.location ?? '')?.[1]
  if (!id) throw new Error(`inbox not made: ${made.status}`)
  return { id, address: `${prefix}@inbox.test` }
}

async function deliver(to: string, subject: string): Promise<void> {
  const result = await sendMail(server.app.smtpPort, { to: [to] }, simpleMessage({ to, subject }))
  expect(result.data?.code).toBe(250)
}

const idsOn = (html: string) => [...html.matchAll(/name="selected" value="(msg_[0-9a-f]{32})"/g)].map((m) => m[1]!)
const unreadOf = (html: string) => Number(/data-unread="(\d+)"/.exec(html)?.[1])

beforeAll(async () => {
  server = await startTestServer()
  ;({ client: owner, organizationId: org } = await setUp(server, { email: 'owner@example.com', preset: 'local' }))
})
afterAll(() => server.stop())

test('bulk read, unread and delete touch only this inbox of this organisation, and come back to the same view', async () => {
  const a = await inbox(owner, org, 'bulk-a')
  const b = await inbox(owner, org, 'bulk-b')
  for (const subject of ['one', 'two', 'three']) await deliver(a.address, subject)
  await deliver(b.address, 'elsewhere')
  const pathA = `/console/orgs/${org}/inboxes/${a.id}`
  const pathB = `/console/orgs/${org}/inboxes/${b.id}`
  const listed = await owner.get(pathA)
  const [three, two, one] = idsOn(listed.html)
  const [elsewhere] = idsOn((await owner.get(pathB)).html)
  expect(unreadOf(listed.html)).toBe(3)

  // Mark read: this inbox's ids only; the other inbox's id in the same post is ignored.
  const marked = await owner.post(`${pathA}/bulk`, {
    back: '?q=is%3Aunread',
    action: 'read',
    selected: [three!, two!, elsewhere!],
  })
  expect(marked.status).toBe(303)
  expect(marked.location).toBe(`${pathA}?q=is%3Aunread`)
  expect(unreadOf((await owner.get(pathA)).html)).toBe(1)
  expect(unreadOf((await owner.get(pathB)).html)).toBe(1)
  expect(idsOn((await owner.get(`${pathA}?q=is%3Aunread`)).html)).toEqual([one!])

  // `back` is a query string or nothing: a path or another host is dropped.
  for (const back of ['//evil.example/x', 'https://evil.example/', '/console/orgs/other']) {
    const bounced = await owner.post(`${pathA}/bulk`, { back, action: 'unread', selected: [two!] })
    expect(bounced.location).toBe(pathA)
  }
  expect(unreadOf((await owner.get(pathA)).html)).toBe(2)

  // Without the token nothing changes; an unknown action is refused.
  expect((await owner.post(`${pathA}/bulk`, { action: 'delete', selected: [one!] }, { csrf: null })).status).toBe(403)
  expect((await owner.post(`${pathA}/bulk`, { action: 'archive', selected: [one!] })).status).toBe(400)
  expect(idsOn((await owner.get(pathA)).html)).toHaveLength(3)

  // Delete: the other inbox's message survives being named.
  await owner.post(`${pathA}/bulk`, { action: 'delete', selected: [one!, two!, elsewhere!] })
  expect(idsOn((await owner.get(pathA)).html)).toEqual([three!])
  expect(idsOn((await owner.get(pathB)).html)).toEqual([elsewhere!])

  // A row's own Delete button posts `message` to the same route.
  await owner.post(`${pathA}/bulk`, { message: three! })
  expect(idsOn((await owner.get(pathA)).html)).toEqual([])
  expect((await owner.post(`${pathA}/bulk`, { message: elsewhere! })).status).toBe(404)
})

test('a message named twice in one post is deleted once, with the rest of the selection', async () => {
  const box = await inbox(owner, org, 'bulk-twice')
  for (const subject of ['first', 'second', 'kept']) await deliver(box.address, subject)
  const path = `/console/orgs/${org}/inboxes/${box.id}`
  const [kept, second, first] = idsOn((await owner.get(path)).html)
  const deleted = await owner.post(`${path}/bulk`, { action: 'delete', selected: [first!, first!, second!] })
  expect(deleted.status).toBe(303)
  expect(idsOn((await owner.get(path)).html)).toEqual([kept!])
})

test('another organisation cannot mark or delete these messages', async () => {
  const mine = await inbox(owner, org, 'bulk-mine')
  await deliver(mine.address, 'private')
  const [id] = idsOn((await owner.get(`/console/orgs/${org}/inboxes/${mine.id}`)).html)
  const created = await owner.post('/console/admin/orgs', { name: 'Other', preset: 'local' })
  const other = /orgs\/(org_[0-9a-f]{32})/.exec(created.location!)![1]!
  const theirs = await inbox(owner, other, 'bulk-theirs')
  // The owner belongs to both; a post through the other organisation's inbox names this one's message.
  await owner.post(`/console/orgs/${other}/inboxes/${theirs.id}/bulk`, { action: 'delete', selected: [id!] })
  await owner.post(`/console/orgs/${other}/inboxes/${theirs.id}/bulk`, { action: 'read', selected: [id!] })
  const after = (await owner.get(`/console/orgs/${org}/inboxes/${mine.id}`)).html
  expect(idsOn(after)).toEqual([id!])
  expect(unreadOf(after)).toBe(1)
  // An inbox of another organisation through this one's path: not found.
  expect(
    (await owner.post(`/console/orgs/${org}/inboxes/${theirs.id}/bulk`, { action: 'read', selected: [id!] })).status,
  ).toBe(404)
})

test('opening a message in the console reads it; /v1 reads never do', async () => {
  const box = await inbox(owner, org, 'bulk-read')
  await deliver(box.address, 'watch me')
  const path = `/console/orgs/${org}/inboxes/${box.id}`
  const [id] = idsOn((await owner.get(path)).html)
  const key = await owner.post(`/console/orgs/${org}/keys`, { name: 'reader' })
  const secret = /ph_live_[0-9a-f]{16}_[0-9a-f]{48}/.exec((await owner.get(key.location!)).html)![0]
  const api = await fetch(`${server.app.httpUrl}/v1/messages/${id}`, { headers: { authorization: `Bearer ${secret}` } })
  expect(api.status).toBe(200)
  expect(Object.keys(((await api.json()) as { data: object }).data)).not.toContain('read')
  expect(unreadOf((await owner.get(path)).html)).toBe(1)
  expect((await owner.get(`/console/orgs/${org}/messages/${id}`)).status).toBe(200)
  expect(unreadOf((await owner.get(path)).html)).toBe(0)
})
