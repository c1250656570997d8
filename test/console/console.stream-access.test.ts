/**
 * A live inbox stream lasts only as long as the access that opened it: it ends at once when
 * its session ends here (sign-out, sign-out everywhere, a password change elsewhere, the
 * operator's reset) or its user leaves the organisation, and it sends nothing more once the
 * session expired or was ended by the CLI in another process.
 */
import { afterAll, afterEach, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { join } from 'node:path'
import { ManualClock } from '../../src/clock.ts'
import { findUserByEmail } from '../../src/core/users/users.ts'
import { addMember, type ConsoleClient, PASSWORD, setUp, signedIn } from '../support/console-client.ts'
import { openEventStream } from '../support/event-stream.ts'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { sendMail, simpleMessage } from '../support/smtp.ts'

setDefaultTimeout(30_000)

const ROOT = join(import.meta.dir, '..', '..')
const clock = new ManualClock('2026-04-01T09:00:00.000Z')
let server: TestServer
let operator: ConsoleClient
let org: string
let key: string
let inbox: { id: string; address: string }
let people = 0

beforeAll(async () => {
  server = await startTestServer({ clock, env: { CONSOLE_SESSION_DAYS: '14' } })
  ;({ client: operator, organizationId: org, key } = await setUp(server, { email: 'owner@example.com' }))
  inbox = (await server.post('/v1/inboxes', key)).body.data
})
afterAll(() => server.stop())

/** A new member of the organisation, signed in, with a page loaded (so its forms carry a token). */
async function newMember(): Promise<{ client: ConsoleClient; email: string; id: string }> {
  const email = `member${++people}@example.com`
  const client = await addMember(server, operator, org, email)
  await client.get('/console/account')
  return { client, email, id: (await findUserByEmail(server.app.services, email))!.id }
}

/**
 * An inbox of its own, still empty. In PostgreSQL mode a machine's first fallback reading of a
 * watched inbox that already holds mail wakes its listeners once (wake-fallback.ts); sent while
 * the access was still valid, that wake could land before the ending a test waits for.
 */
async function emptyInbox(): Promise<{ id: string; address: string }> {
  const created = await server.post('/v1/inboxes', key)
  expect(created.status).toBe(201)
  made.push(created.body.data.id)
  return created.body.data
}
// Deleted after each test: the organisation's free limit is 11 active inboxes.
const made: string[] = []
afterEach(async () => {
  for (const id of made.splice(0)) expect((await server.delete(`/v1/inboxes/${id}`, key)).status).toBe(204)
})

/** The inbox page's own stream, or (shared) the one stream a browser's pages share; by default on an empty inbox. */
async function openStream(client: ConsoleClient, shared = false, watched?: { id: string }) {
  watched ??= await emptyInbox()
  const path = shared ? `/console/live?watch=${org}:${watched.id}` : `/console/orgs/${org}/inboxes/${watched.id}/events`
  const stream = await openEventStream(client, path)
  expect(stream.response.status).toBe(200)
  expect(await stream.next()).toBe('ready')
  return stream
}

const mail = async (to = inbox) =>
  expect(
    (await sendMail(server.app.smtpPort, { to: [to.address] }, simpleMessage({ to: to.address }))).data?.code,
  ).toBe(250)
const endings = (userId: string) =>
  server.logs
    .filter((line) => line.event === 'console_stream_ended' && line.user_id === userId)
    .map((line) => line.reason)

test('sign-out ends the stream of that session', async () => {
  const member = await newMember()
  const stream = await openStream(member.client)
  expect((await member.client.post('/console/sign-out')).status).toBe(303)
  expect(await stream.next()).toBeNull()
  expect(endings(member.id)).toEqual(['access_ended'])
})

test("the browser's shared stream ends with its session too, and with a membership it watches", async () => {
  const member = await newMember()
  const stream = await openStream(member.client, true)
  expect((await member.client.post('/console/sign-out')).status).toBe(303)
  expect(await stream.next()).toBeNull()
  const removed = await newMember()
  const watching = await openStream(removed.client, true)
  await operator.get(`/console/orgs/${org}/members`)
  expect((await operator.post(`/console/orgs/${org}/members/${removed.id}/remove`)).status).toBe(303)
  expect(await watching.next()).toBeNull()
})

test("sign-out everywhere, from another browser, ends every one of the user's streams", async () => {
  const member = await newMember()
  const streams = [await openStream(member.client), await openStream(member.client)]
  const elsewhere = await signedIn(server, member.email)
  await elsewhere.get('/console/account')
  expect((await elsewhere.post('/console/account/sessions/revoke')).status).toBe(303)
  for (const stream of streams) expect(await stream.next()).toBeNull()
})

test("a password change ends the other sessions' streams; the changing session's stream goes on", async () => {
  const member = await newMember()
  const other = await openStream(member.client)
  const changer = await signedIn(server, member.email)
  await changer.get('/console/account')
  const own = await openStream(changer, false, inbox)
  expect(
    (await changer.post('/console/account/password', { current: PASSWORD, password: 'another password 2' })).status,
  ).toBe(303) // to the account page that says so (post/redirect/get)
  expect(await other.next()).toBeNull()
  await mail()
  expect(await own.next()).toBe('message_stored')
  await own.cancel()
})

test("the operator's password reset and sign-out-everywhere end the user's streams", async () => {
  await operator.get('/console/admin')
  for (const action of ['reset-password', 'revoke-sessions']) {
    const member = await newMember()
    const stream = await openStream(member.client)
    expect((await operator.post(`/console/admin/users/${member.id}/${action}`)).status).toBeLessThan(400)
    expect(await stream.next()).toBeNull()
    expect(endings(member.id)).toEqual(['access_ended'])
  }
})

test("removal from the organisation ends the removed member's streams, not the owner's", async () => {
  const member = await newMember()
  const theirs = await openStream(member.client)
  await operator.get(`/console/orgs/${org}/members`)
  const ours = await openStream(operator, false, inbox)
  expect((await operator.post(`/console/orgs/${org}/members/${member.id}/remove`)).status).toBe(303)
  expect(await theirs.next()).toBeNull()
  await mail()
  expect(await ours.next()).toBe('message_stored')
  await ours.cancel()
})

test('a member who leaves ends their own streams', async () => {
  const member = await newMember()
  const stream = await openStream(member.client)
  await member.client.get(`/console/orgs/${org}/members`)
  expect((await member.client.post(`/console/orgs/${org}/members/${member.id}/remove`)).status).toBe(303)
  expect(await stream.next()).toBeNull()
})

test('a reset by the CLI, in another process, stops the stream before the next event', async () => {
  const fresh = await emptyInbox()
  const member = await newMember()
  const stream = await openStream(member.client, false, fresh)
  const cli = Bun.spawn(['bun', 'src/cli.ts', 'users', 'reset-password', member.email], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_PATH: server.databasePath,
      DATABASE_URL: server.databaseUrl ?? '',
      CONSOLE_PASSWORD_MEMORY_KIB: String(server.config.consolePasswordMemoryKib),
    },
    stdout: 'pipe',
    stderr: 'pipe',
  })
  expect(await cli.exited).toBe(0)
  expect(await server.countRows('select count(*) as n from sessions where user_id = ?', member.id)).toBe(0)
  await mail(fresh)
  expect(await stream.next()).toBeNull()
})

// Last: moving the clock past the session lifetime ends every session, the operator's too.
test('an expired session gets no further event: the stream ends instead', async () => {
  const member = await newMember()
  const watched = await emptyInbox()
  const stream = await openStream(member.client, false, watched)
  clock.advance(15 * 86_400_000)
  await mail(watched)
  expect(await stream.next()).toBeNull()
  expect(endings(member.id)).toEqual(['access_ended'])
})
