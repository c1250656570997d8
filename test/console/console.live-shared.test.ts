/**
 * The one stream a browser's tabs share (`/console/live`): it carries the events of every
 * inbox it watches, each naming its inbox, survives one inbox's deletion, answers an
 * inbox that is gone or not the user's with `inbox_deleted` (no difference between the
 * two), and refuses more than MAX_WATCHED_INBOXES.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { MAX_WATCHED_INBOXES } from '../../src/console/routes/live.ts'
import { setUp, type ConsoleClient } from '../support/console-client.ts'
import { openEventStream } from '../support/event-stream.ts'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { sendMail, simpleMessage } from '../support/smtp.ts'

setDefaultTimeout(30_000)

let server: TestServer
let owner: ConsoleClient
let key: string
let org: string

beforeAll(async () => {
  server = await startTestServer()
  ;({ client: owner, organizationId: org, key } = await setUp(server, { email: 'owner@example.com' }))
})
afterAll(() => server.stop())

const newInbox = async (): Promise<{ id: string; address: string }> => (await server.post('/v1/inboxes', key)).body.data
/** The browser's shared stream of `keys`; `next` gives each event as `name data`. */
async function openShared(keys: string[]) {
  const query = keys.map((k) => `watch=${encodeURIComponent(k)}`).join('&')
  const stream = await openEventStream(owner, `/console/live?${query}`)
  return { ...stream, next: stream.nextWithData }
}

test('one stream carries the events of each watched inbox, naming it, and outlives a deleted one', async () => {
  const [a, b] = [await newInbox(), await newInbox()]
  const stream = await openShared([`${org}:${a.id}`, `${org}:${b.id}`])
  expect(stream.response.status).toBe(200)
  expect(stream.response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8')
  expect(await stream.next()).toStartWith('ready ')
  expect(
    (await sendMail(server.app.smtpPort, { to: [b.address] }, simpleMessage({ to: b.address, subject: 'To B' }))).data
      ?.code,
  ).toBe(250)
  expect(await stream.next()).toBe(`message_stored ${b.id}`)
  expect((await server.delete(`/v1/inboxes/${a.id}`, key)).status).toBe(204)
  // On two PostgreSQL machines the fallback re-reading (wake-fallback.ts) may tell of B's
  // message once more, a wake that only costs a query: the deletion is the next other event.
  let next = await stream.next()
  while (next === `message_stored ${b.id}`) next = await stream.next()
  expect(next).toBe(`inbox_deleted ${a.id}`)
  expect(
    (await sendMail(server.app.smtpPort, { to: [b.address] }, simpleMessage({ to: b.address, subject: 'Still' }))).data
      ?.code,
  ).toBe(250)
  expect(await stream.next()).toBe(`message_stored ${b.id}`)
  stream.abort()
})

test('an inbox that is gone, unknown or of another organisation is reported deleted, alike', async () => {
  const live = await newInbox()
  const gone = await newInbox()
  await server.delete(`/v1/inboxes/${gone.id}`, key)
  const stranger = `org_${'0'.repeat(32)}`
  const unknown = `inbox_${'f'.repeat(32)}`
  const stream = await openShared([
    `${org}:${live.id}`,
    `${org}:${gone.id}`,
    `${stranger}:${unknown}`,
    `${org}:${unknown}`,
  ])
  const events = [await stream.next(), await stream.next(), await stream.next()]
  expect(events.sort()).toEqual(
    [`inbox_deleted ${gone.id}`, `inbox_deleted ${unknown}`, `inbox_deleted ${unknown}`].sort(),
  )
  expect(await stream.next()).toStartWith('ready ')
  stream.abort()
  // Nothing watchable at all: the answer says so and ends, holding no slot.
  const none = await openShared([`${org}:${gone.id}`])
  expect(await none.next()).toBe(`inbox_deleted ${gone.id}`)
  expect(await none.next()).toBeNull()
})

test('more than the bound of watched inboxes, or none, is refused; signed out is sent to sign-in', async () => {
  const many = Array.from({ length: MAX_WATCHED_INBOXES + 1 }, (_, i) => `${org}:inbox_${String(i).padStart(32, '0')}`)
  expect((await owner.get(`/console/live?${many.map((k) => `watch=${k}`).join('&')}`)).status).toBe(400)
  expect((await owner.get('/console/live')).status).toBe(400)
  expect((await fetch(`${server.url}/console/live?watch=${org}:x`, { redirect: 'manual' })).status).toBe(303)
})
