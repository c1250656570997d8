/**
 * The inbox page's event stream: an event arrives after a message is stored over SMTP,
 * and when the inbox is deleted; open streams are bounded per user and per organisation
 * and a closed one frees its slot; shutdown ends every stream.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { LiveStreams, MAX_STREAMS_PER_ORGANIZATION, MAX_STREAMS_PER_USER } from '../../src/console/live-streams.ts'
import type { Services } from '../../src/core/common/services.ts'
import { createLogger } from '../../src/log.ts'
import { InboxNotifier } from '../../src/notifier.ts'
import { setUp, type ConsoleClient } from '../support/console-client.ts'
import { openEventStream } from '../support/event-stream.ts'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { sendMail, simpleMessage } from '../support/smtp.ts'
import { until } from '../support/wait.ts'

setDefaultTimeout(30_000)

let server: TestServer
let owner: ConsoleClient
let key: string
let org: string

beforeAll(async () => {
  server = await startTestServer()
  ;({ client: owner, organizationId: org, key } = await setUp(server, { email: 'owner@example.com' }))
  await owner.get(`/console/orgs/${org}`)
})
afterAll(() => server.stop())

async function newInbox(): Promise<{ id: string; address: string }> {
  return (await server.post('/v1/inboxes', key)).body.data
}

const cookie = () => owner.cookieHeader()

/** Listeners for the inbox on every machine behind the server. */
const listeners = (inboxId: string) => server.sum((machine) => machine.notifier.listenerCount(inboxId))

/**
 * Every stream has ended and given its slots back. On PostgreSQL the slots are lease rows a
 * stream releases a moment after it stops listening; a stream opened before that counts it.
 */
async function allStreamsGone(inboxId: string): Promise<boolean> {
  if (listeners(inboxId) !== 0) return false
  return (
    !server.databaseUrl ||
    (await server.countRows("select count(*) as n from slot_leases where subject_id like 'stream-%'")) === 0
  )
}

/** The inbox page's own event stream. */
const openStream = (inboxId: string) => openEventStream(owner, `/console/orgs/${org}/inboxes/${inboxId}/events`)

test('a message stored over SMTP is announced on the stream; a deleted inbox ends it', async () => {
  const inbox = await newInbox()
  const stream = await openStream(inbox.id)
  expect(stream.response.status).toBe(200)
  expect(stream.response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8')
  expect(await stream.next()).toBe('ready')
  const sent = await sendMail(
    server.app.smtpPort,
    { to: [inbox.address] },
    simpleMessage({ to: inbox.address, subject: 'Live' }),
  )
  expect(sent.data?.code).toBe(250)
  expect(await stream.next()).toBe('message_stored')
  expect((await server.delete(`/v1/inboxes/${inbox.id}`, key)).status).toBe(204)
  expect(await stream.next()).toBe('inbox_deleted')
  expect(await stream.next()).toBeNull()
  await until(() => listeners(inbox.id) === 0, 'the ended stream to drop its listener')
  expect(server.logs.find((line) => line.event === 'console_stream_ended' && line.inbox_id === inbox.id)?.reason).toBe(
    'inbox_deleted',
  )
})

test(`at most ${MAX_STREAMS_PER_USER} streams per user; a closed stream frees its slot and its listener`, async () => {
  const inbox = await newInbox()
  const streams = []
  for (let i = 0; i < MAX_STREAMS_PER_USER; i++) {
    const stream = await openStream(inbox.id)
    expect(await stream.next()).toBe('ready')
    streams.push(stream)
  }
  const refused = await fetch(`${server.url}/console/orgs/${org}/inboxes/${inbox.id}/events`, {
    headers: { cookie: cookie() },
  })
  expect(refused.status).toBe(429)
  expect(refused.headers.get('retry-after')).toBe('5')
  expect(listeners(inbox.id)).toBe(MAX_STREAMS_PER_USER)

  // A HEAD is answered without a stream, so it takes no slot even when all are taken.
  const head = await fetch(`${server.url}/console/orgs/${org}/inboxes/${inbox.id}/events`, {
    method: 'HEAD',
    headers: { cookie: cookie() },
  })
  expect(head.status).toBe(200)
  expect(listeners(inbox.id)).toBe(MAX_STREAMS_PER_USER)

  streams.pop()!.abort()
  await until(() => listeners(inbox.id) === MAX_STREAMS_PER_USER - 1, 'the closed stream to drop its listener')
  if (server.databaseUrl)
    await until(
      async () =>
        (await server.countRows("select count(*) as n from slot_leases where subject_id like 'stream-user:%'")) ===
        MAX_STREAMS_PER_USER - 1,
      'the closed stream to give its slot back',
    )
  const again = await openStream(inbox.id)
  expect(again.response.status).toBe(200)
  for (const stream of [...streams, again]) stream.abort()
  await until(() => allStreamsGone(inbox.id), 'every closed stream to drop its listener and its slot')
  const ended = server.logs.filter((line) => line.event === 'console_stream_ended' && line.inbox_id === inbox.id)
  expect(ended.map((line) => line.reason)).toEqual(Array(MAX_STREAMS_PER_USER + 1).fill('client_left'))
})

test(`at most ${MAX_STREAMS_PER_ORGANIZATION} streams per organisation, whoever opens them`, () => {
  const stopping = new AbortController()
  const logs: Record<string, unknown>[] = []
  const logger = createLogger('info', (line) => logs.push(JSON.parse(line)))
  const services = { notifier: new InboxNotifier(), stopping: stopping.signal, logger } as Pick<
    Services,
    'notifier' | 'stopping' | 'logger'
  > as Services
  const streams = new LiveStreams()
  const stillAllowed = () => true
  const leaving = new AbortController()
  for (let i = 0; i < MAX_STREAMS_PER_ORGANIZATION; i++)
    streams.stream(services, leaving.signal, { userId: `user_${i}`, organizationId: 'org_a', stillAllowed }, 'inbox_a')
  expect(() =>
    streams.stream(services, leaving.signal, { userId: 'user_new', organizationId: 'org_a', stillAllowed }, 'inbox_a'),
  ).toThrow('per organisation')
  // Another organisation is not affected.
  streams.stream(services, leaving.signal, { userId: 'user_new', organizationId: 'org_b', stillAllowed }, 'inbox_b')
  expect(streams.open).toBe(MAX_STREAMS_PER_ORGANIZATION + 1)
  stopping.abort()
  expect(streams.open).toBe(0)
  expect(services.notifier.listenerCount('inbox_a')).toBe(0)
  const ended = logs.filter((line) => line.event === 'console_stream_ended')
  expect(ended).toHaveLength(MAX_STREAMS_PER_ORGANIZATION + 1)
  expect(ended.every((line) => line.reason === 'shutdown')).toBe(true)
})

test('shutdown ends every open stream', async () => {
  const inbox = await newInbox()
  const stream = await openStream(inbox.id)
  expect(await stream.next()).toBe('ready')
  const stopped = server.app.stop()
  expect(await stream.next()).toBeNull()
  await stopped
  expect(server.logs.find((line) => line.event === 'console_stream_ended' && line.inbox_id === inbox.id)?.reason).toBe(
    'shutdown',
  )
})
