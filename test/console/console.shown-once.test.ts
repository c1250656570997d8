/**
 * Post/redirect/get for values shown once: creating a key, an invite link or a reset
 * password redirects to a page that shows the value; reloading that page shows the same
 * value and makes nothing new. Only the session that made it sees it, for 10 minutes, on
 * whichever machine answers (the value is sealed in the browser's cookie).
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { ManualClock } from '../../src/clock.ts'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { ConsoleClient, PASSWORD, setUp, signedIn } from '../support/console-client.ts'

const clock = new ManualClock('2026-08-01T09:00:00.000Z')
let server: TestServer
let owner: ConsoleClient
let organizationId: string

beforeAll(async () => {
  server = await startTestServer({ clock })
  ;({ client: owner, organizationId } = await setUp(server, { email: 'op@example.com' }))
})
afterAll(() => server.stop())

const count = (sql: string) => server.countRows(sql)

test('a reload after "Create key" shows the same key and makes no second one; another session and a later visit see nothing', async () => {
  const keysBefore = await count('select count(*) as n from api_keys')
  await owner.get(`/console/orgs/${organizationId}/keys`)
  const made = await owner.post(`/console/orgs/${organizationId}/keys`, { name: 'CI' })
  expect(made.status).toBe(303)
  expect(made.location).toStartWith(`/console/orgs/${organizationId}/keys?created=`)
  const first = await owner.get(made.location!)
  const reload = await owner.get(made.location!)
  const key = /value="(ph_live_[0-9a-f_]+)"/.exec(first.html)![1]!
  expect(/value="(ph_live_[0-9a-f_]+)"/.exec(reload.html)![1]).toBe(key)
  expect(await count('select count(*) as n from api_keys')).toBe(keysBefore + 1)

  // The same URL in another session of the same user shows no key.
  const other = await signedIn(server, 'op@example.com')
  const elsewhere = await other.get(made.location!)
  expect(elsewhere.status).toBe(200)
  expect(elsewhere.html).not.toContain(key)
  expect(elsewhere.html).toContain('no longer shown')
  // The value rides in this browser's cookie, sealed under its session token: the cookie
  // copied into the other session opens nothing, nor does one altered by a byte.
  const [name, sealed] = [...owner.cookies].find(([cookie]) => cookie.startsWith('ph_shown_'))!
  other.cookies.set(name, sealed)
  expect((await other.get(made.location!)).html).not.toContain(key)
  const altered = `${sealed.slice(0, 20)}${sealed[20] === 'A' ? 'B' : 'A'}${sealed.slice(21)}`
  owner.cookies.set(name, altered)
  expect((await owner.get(made.location!)).html).toContain('no longer shown')
  owner.cookies.set(name, sealed)
  expect((await owner.get(made.location!)).html).toContain(key)
  // Nor does this session once the 10 minutes are over.
  clock.advance(10 * 60_000)
  const later = await owner.get(made.location!)
  expect(later.html).not.toContain(key)
  expect(later.html).toContain('no longer shown')
})

test('a reload after "Create invite link" shows the same link and opens no second invite', async () => {
  const invitesBefore = await count('select count(*) as n from invites')
  await owner.get(`/console/orgs/${organizationId}/members`)
  const made = await owner.post(`/console/orgs/${organizationId}/invites`, { role: 'member' })
  expect(made.status).toBe(303)
  const first = await owner.get(made.location!)
  const reload = await owner.get(made.location!)
  const link = /value="(http[^"]+\/console\/invites\/[^"]+)"/.exec(first.html)![1]!
  expect(reload.html).toContain(link)
  expect(await count('select count(*) as n from invites')).toBe(invitesBefore + 1)
  const other = await signedIn(server, 'op@example.com')
  const elsewhere = await other.get(made.location!)
  expect(elsewhere.status).toBe(404)
  expect(elsewhere.html).not.toContain(link)
})

test("the operator's reset password is shown on a GET, to that session only", async () => {
  const invite = await owner.get(
    (await owner.post(`/console/orgs/${organizationId}/invites`, { role: 'member' })).location!,
  )
  const path = new URL(/value="(http[^"]+)"/.exec(invite.html)![1]!).pathname
  const member = new ConsoleClient(server.url)
  await member.get(path)
  await member.post(path, { email: 'm@example.com', password: PASSWORD })
  const admin = await owner.get('/console/admin')
  const userId = /users\/(user_[0-9a-f]{32})\/revoke-sessions/.exec(admin.html)![1]
  const made = await owner.post(`/console/admin/users/${userId}/reset-password`)
  expect(made.status).toBe(303)
  const first = await owner.get(made.location!)
  const password = /value="([0-9a-f]{5}(-[0-9a-f]{5})+)"/.exec(first.html)![1]!
  expect((await owner.get(made.location!)).html).toContain(password)
  expect(await count("select count(*) as n from audit_events where action = 'user.password_reset'")).toBe(1)
  const other = await signedIn(server, 'op@example.com')
  expect((await other.get(made.location!)).status).toBe(404)
  expect((await signedIn(server, 'm@example.com', password)).hasSession()).toBe(true)
})

test('each new value replaces the one held before: the browser holds one sealed cookie however many keys it makes', async () => {
  const held = () => [...owner.cookies.keys()].filter((name) => name.startsWith('ph_shown_'))
  let previous: string | undefined
  for (let i = 0; i < 60; i++) {
    await owner.get(`/console/orgs/${organizationId}/keys`)
    const made = await owner.post(`/console/orgs/${organizationId}/keys`, { name: `bulk ${i}` })
    expect(made.status).toBe(303)
    // Without the replacement, 60 cookies of about 300 bytes (18 KB) outgrow the header limit.
    expect(held()).toHaveLength(1)
    const page = await owner.get(made.location!)
    expect(page.status).toBe(200)
    expect(page.html).toMatch(/value="ph_live_[0-9a-f_]+"/)
    previous = made.location!
  }
  // The page of an earlier key no longer shows it once a newer one was made; the newest still does.
  await owner.get(`/console/orgs/${organizationId}/keys`)
  const last = await owner.post(`/console/orgs/${organizationId}/keys`, { name: 'last' })
  expect((await owner.get(previous!)).html).not.toMatch(/value="ph_live_[0-9a-f_]+"/)
  expect((await owner.get(last.location!)).html).toMatch(/value="ph_live_[0-9a-f_]+"/)
})
