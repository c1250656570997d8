/**
 * Long polls (wait_seconds > 0): woken by a stored message, 204 with an empty body on
 * timeout, never missing a message committed while the poll is set up, filters honoured
 * while waiting, 404 when the inbox goes away, and not cut by HTTP_IDLE_TIMEOUT_SECONDS
 * (nor is a console live stream, while a silent keep-alive connection is).
 * Concurrent long polls: 10 per key and 30 per organisation (429 long_poll_limit_exceeded
 * for the next one), and a disconnecting client frees its slot at once.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { connect } from 'node:net'
import { setUp } from '../support/console-client.ts'
import { errorCode, type TestServer, type Tenant } from '../support/harness.ts'
import { SmtpClient, simpleMessage } from '../support/smtp.ts'
import {
  CONTENT_FIELDS,
  SUMMARY_FIELDS,
  deliver,
  newInbox,
  principalOf,
  sortedKeys,
  startRoomyServer,
} from '../support/messages.ts'
import { until } from '../support/wait.ts'

let server: TestServer
let tenant: Tenant
/**
 * A second server whose connections may stay silent for 1 s only. Bun checks idle
 * connections about every 4 s, so a connection it would cut is cut within 5 s; a wait of
 * IDLE_PROOF_SECONDS is surely past that. Started first and checked last, so the wait
 * overlaps the other tests of this file.
 */
let idleServer: TestServer
const IDLE_PROOF_SECONDS = 6
let idleProofs: Promise<{
  keepAliveClosedAfterMs: number
  afterPollClosedAfterMs: number
  poll: { status: number; text: string }
  streamEvents: string[]
}>

/** A keep-alive connection that asks once (`path`) and then says nothing: ms from the answer until the server closes it. */
function silentKeepAlive(port: number, path = '/health', key?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const authorization = key ? `Authorization: Bearer ${key}\r\n` : ''
    const socket = connect(port, '127.0.0.1', () =>
      socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${authorization}\r\n`),
    )
    let answeredAt = 0
    socket.on('data', () => (answeredAt ||= performance.now()))
    socket.on('close', () =>
      answeredAt ? resolve(performance.now() - answeredAt) : reject(new Error('closed before answering')),
    )
    socket.on('error', reject)
  })
}

/** A console live stream: the event names it delivers until `stop` resolves (keep-alive comments skipped). */
async function liveStreamEvents(server: TestServer, afterOpen: () => Promise<void>): Promise<string[]> {
  const { client, key, organizationId: organization } = await setUp(server)
  const inbox = await newInbox(server, key)
  const cookie = [...client.cookies].map(([name, value]) => `${name}=${value}`).join('; ')
  const response = await fetch(`${server.url}/console/orgs/${organization}/inboxes/${inbox.id}/events`, {
    headers: { cookie },
  })
  const reader = response.body!.getReader()
  const events: string[] = []
  void (async () => {
    const decoder = new TextDecoder()
    let text = ''
    for (;;) {
      const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }))
      if (done) return events.push('(connection closed)')
      text += decoder.decode(value, { stream: true })
      for (const [, name] of text.matchAll(/^event: (.+)$/gm)) events.push(name!)
      text = text.slice(text.lastIndexOf('\n') + 1)
    }
  })()
  await afterOpen()
  const sent = await SmtpClient.connect(server.app.smtpPort)
  await sent.command('EHLO stream.test')
  await sent.command('MAIL FROM:<sender@example.com>')
  await sent.command(`RCPT TO:<${inbox.address}>`)
  await sent.data(simpleMessage({ to: inbox.address, subject: 'after the silence' }))
  await sent.quit()
  await until(
    () => events.includes('message_stored') || events.includes('(connection closed)'),
    'the stream to announce the message',
  ).catch(() => {})
  const seen = [...events]
  await reader.cancel().catch(() => {})
  return seen
}

beforeAll(async () => {
  server = await startRoomyServer()
  tenant = await server.tenant()
  // The body timeout must fit in the idle timeout (a silent connection is cut mid-request too).
  idleServer = await startRoomyServer({ env: { HTTP_IDLE_TIMEOUT_SECONDS: '1', HTTP_BODY_TIMEOUT_MS: '1000' } })
  const idleTenant = await idleServer.tenant('idle')
  const idleInbox = await newInbox(idleServer, idleTenant.key)
  // Proves nothing happens: the live stream stays open through a silence past the idle timeout.
  const silence = Bun.sleep(IDLE_PROOF_SECONDS * 1000)
  idleProofs = (async () => {
    const [keepAliveClosedAfterMs, afterPollClosedAfterMs, poll, streamEvents] = await Promise.all([
      silentKeepAlive(idleServer.app.httpPort),
      silentKeepAlive(idleServer.app.httpPort, `/v1/inboxes/${idleInbox.id}/messages?wait_seconds=1`, idleTenant.key),
      fetch(`${idleServer.url}/v1/inboxes/${idleInbox.id}/messages?wait_seconds=${IDLE_PROOF_SECONDS}`, {
        headers: { authorization: `Bearer ${idleTenant.key}` },
      }).then(
        async (r) => ({ status: r.status, text: await r.text() }),
        (error: unknown) => ({ status: 0, text: String(error) }),
      ),
      liveStreamEvents(idleServer, () => silence),
    ])
    return { keepAliveClosedAfterMs, afterPollClosedAfterMs, poll, streamEvents }
  })()
})
afterAll(async () => {
  await idleServer.stop()
  await server.stop()
})

const poll = (inboxId: string, query: string, init: RequestInit = {}) =>
  fetch(`${server.url}/v1/inboxes/${inboxId}/messages?${query}`, {
    ...init,
    headers: { authorization: `Bearer ${tenant.key}` },
  })

// Summed over the machines behind the URL (two when the suite runs on a pair).
const waiting = (inboxId: string) => server.sum((services) => services.notifier.listenerCount(inboxId))

describe('waking', () => {
  test('a poll waiting before the mail is sent wakes with it (the recommended query)', async () => {
    const inbox = await newInbox(server, tenant.key)
    const afterDot: number[] = []
    const after250: number[] = []
    for (let i = 0; i < 15; i++) {
      let answeredAt = 0
      const response = poll(inbox.id, `wait_seconds=180&limit=1&include=content&subject=wake-${i}`).then((r) => {
        answeredAt = performance.now()
        return r
      })
      await until(() => waiting(inbox.id) === 1, 'the poll to subscribe')
      const client = await SmtpClient.connect(server.app.smtpPort)
      await client.command('EHLO wake.test')
      await client.command('MAIL FROM:<sender@example.com>')
      expect((await client.command(`RCPT TO:<${inbox.address}>`)).code).toBe(250)
      expect((await client.command('DATA')).code).toBe(354)
      client.writeBody(simpleMessage({ to: inbox.address, subject: `wake-${i}` }))
      const dotSent = performance.now()
      client.socket.write('\r\n.\r\n')
      const reply = await client.next()
      const acknowledged = performance.now()
      await client.quit()
      expect(reply.code).toBe(250)
      const answered = await response
      afterDot.push(answeredAt - dotSent)
      after250.push(answeredAt - acknowledged)
      expect(answered.status).toBe(200)
      const body = (await answered.json()) as any
      expect(body.data).toHaveLength(1)
      expect(body.data[0].id).toBe(reply.text.match(/msg_[0-9a-f]{32}/)![0])
      expect(body.data[0].subject).toBe(`wake-${i}`)
      expect(sortedKeys(body.data[0])).toEqual([...SUMMARY_FIELDS, ...CONTENT_FIELDS].sort())
      expect(waiting(inbox.id)).toBe(0)
    }
    // Measured, not asserted. Negative "after 250" means the poll answered before the
    // client had read the 250 (the wake fires right after the commit, before the reply).
    const stats = (xs: number[]) => {
      const sorted = [...xs].sort((a, b) => a - b)
      return `median ${sorted[7]!.toFixed(2)} ms, min ${sorted[0]!.toFixed(2)}, max ${sorted.at(-1)!.toFixed(2)}`
    }
    console.log(
      `wake latency: end of DATA → poll response ${stats(afterDot)}; SMTP 250 → poll response ${stats(after250)}`,
    )
  })

  test('with nothing matching, the poll answers 204 with an empty body when the wait ends', async () => {
    const inbox = await newInbox(server, tenant.key)
    const response = await poll(inbox.id, 'wait_seconds=1')
    expect(response.status).toBe(204)
    expect(await response.text()).toBe('')
    expect(response.headers.get('x-request-id')).toMatch(/^req_/)
  })

  test('a poll that matches a retained message answers at once', async () => {
    const inbox = await newInbox(server, tenant.key)
    const [id] = await deliver(server, inbox.address, simpleMessage({ to: inbox.address }))
    const response = await poll(inbox.id, 'wait_seconds=180')
    expect(response.status).toBe(200)
    expect(((await response.json()) as any).data.map((m: { id: string }) => m.id)).toEqual([id])
  })

  test('set-up race: a message committed while the poll is being set up is never missed', async () => {
    const inbox = await newInbox(server, tenant.key)
    // One connection for all transactions: smtp-server holds every new connection's greeting for 100 ms.
    const client = await SmtpClient.connect(server.app.smtpPort)
    await client.command('EHLO race.test')
    const hops = (n: number) =>
      Array.from({ length: n }).reduce<Promise<unknown>>(
        (p) => p.then(() => new Promise((r) => setImmediate(r))),
        Promise.resolve(),
      )
    for (let i = 0; i < 200; i++) {
      // Everything but the final dot goes first, so the commit follows the dot within about
      // a millisecond; the dot and the poll's request are then started in either order, a
      // varying number of event-loop turns apart, so the commit lands before, during and
      // after the poll's set-up across iterations. A missed message leaves its poll waiting
      // for 60 s, past this test's time limit, so a miss fails the test. (The limit leaves room
      // for 200 commits on PostgreSQL with busy cores; it stays under the 60 s.)
      expect((await client.command('MAIL FROM:<race@example.com>')).code).toBe(250)
      expect((await client.command(`RCPT TO:<${inbox.address}>`)).code).toBe(250)
      expect((await client.command('DATA')).code).toBe(354)
      client.writeBody(simpleMessage({ to: inbox.address, subject: `race-${i}` }))
      const gap = (i >> 1) % 6
      const finish = () => {
        client.socket.write('\r\n.\r\n')
        return client.next()
      }
      const start = () => poll(inbox.id, `wait_seconds=60&subject=race-${i}`)
      const [response, reply] =
        i % 2 === 0
          ? await Promise.all([start(), hops(gap).then(finish)])
          : await Promise.all([hops(gap).then(start), finish()])
      expect(reply.code).toBe(250)
      expect({ i, status: response.status }).toEqual({ i, status: 200 })
      expect(((await response.json()) as any).data.map((m: { id: string }) => m.id)).toEqual([
        reply.text.match(/msg_[0-9a-f]{32}/)![0],
      ])
    }
    await client.quit()
  }, 45_000)

  test('a waiting poll ignores a message its filters do not match and returns a later one that does', async () => {
    const inbox = await newInbox(server, tenant.key)
    let settled = false
    const response = poll(inbox.id, 'wait_seconds=30&subject=wanted&sender_domain=example.com').finally(() => {
      settled = true
    })
    await until(() => waiting(inbox.id) === 1, 'the poll to subscribe')
    await deliver(server, inbox.address, simpleMessage({ to: inbox.address, subject: 'something else' }))
    await deliver(
      server,
      inbox.address,
      simpleMessage({ to: inbox.address, subject: 'wanted, wrong sender', from: 'x@example.org' }),
    )
    // Both were stored and signalled; the poll is still waiting on its subscription.
    expect(settled).toBe(false)
    expect(waiting(inbox.id)).toBe(1)
    const [id] = await deliver(server, inbox.address, simpleMessage({ to: inbox.address, subject: 'the WANTED one' }))
    const answered = await response
    expect(answered.status).toBe(200)
    const body = (await answered.json()) as any
    expect(body.data.map((m: { id: string }) => m.id)).toEqual([id])
    expect(body.next_cursor).toBeNull()
  })

  test('a poll on an inbox deleted while it waits answers 404 inbox_not_found', async () => {
    const inbox = await newInbox(server, tenant.key)
    const response = poll(inbox.id, 'wait_seconds=30')
    await until(() => waiting(inbox.id) === 1, 'the poll to subscribe')
    expect((await server.delete(`/v1/inboxes/${inbox.id}`, tenant.key)).status).toBe(204)
    const answered = await response
    const text = await answered.text()
    expect(answered.status).toBe(404)
    expect(errorCode({ status: answered.status, headers: answered.headers, body: JSON.parse(text), text })).toBe(
      'inbox_not_found',
    )
  })
})

interface Waiter {
  response: Promise<Response | 'aborted'>
  abort(): void
}

function startPoll(target: TestServer, key: string, inboxId: string, wait = 60): Waiter {
  const controller = new AbortController()
  const response = fetch(`${target.url}/v1/inboxes/${inboxId}/messages?wait_seconds=${wait}`, {
    headers: { authorization: `Bearer ${key}` },
    signal: controller.signal,
  }).catch((error: unknown) => {
    if (controller.signal.aborted) return 'aborted' as const
    throw error
  })
  return { response, abort: () => controller.abort() }
}

async function expectLimitExceeded(key: string, inboxId: string) {
  const response = await server.get(`/v1/inboxes/${inboxId}/messages?wait_seconds=5`, key)
  expect(response.status).toBe(429)
  expect(errorCode(response)).toBe('long_poll_limit_exceeded')
}

/** Slots held for the key and its organisation, summed over the machines behind the URL. */
const slots = (key: string, tenant: Tenant) => {
  const principal = principalOf(key, tenant.organizationId)
  return {
    key: server.sum((services) => services.longPolls.count(principal).key),
    org: server.sum((services) => services.longPolls.count(principal).org),
  }
}

describe('limits', () => {
  test('the 11th concurrent wait of one key is refused; non-waiting reads still work', async () => {
    const tenant = await server.tenant()
    const inbox = await newInbox(server, tenant.key)
    const polls = Array.from({ length: 10 }, () => startPoll(server, tenant.key, inbox.id))
    await until(() => slots(tenant.key, tenant).key === 10, '10 polls to hold slots')
    await expectLimitExceeded(tenant.key, inbox.id)
    expect((await server.get(`/v1/inboxes/${inbox.id}/messages`, tenant.key)).status).toBe(200)
    // Another key of the same organisation still has its own 10.
    const second = await server.extraKey(tenant.organizationId)
    const more = startPoll(server, second, inbox.id)
    await until(() => slots(second, tenant).key === 1, 'the other key to hold a slot')
    for (const p of [...polls, more]) p.abort()
    await until(() => slots(tenant.key, tenant).org === 0, 'every slot to be freed')
  })

  test('the 31st concurrent wait of one organisation is refused, whatever key asks', async () => {
    const tenant = await server.tenant()
    const inbox = await newInbox(server, tenant.key)
    const keys = [
      tenant.key,
      await server.extraKey(tenant.organizationId),
      await server.extraKey(tenant.organizationId),
      await server.extraKey(tenant.organizationId),
    ]
    // 8 + 8 + 7 + 7 = 30: no key is at its own limit of 10.
    const polls = keys.flatMap((key, i) =>
      Array.from({ length: i < 2 ? 8 : 7 }, () => startPoll(server, key, inbox.id)),
    )
    await until(() => slots(tenant.key, tenant).org === 30, '30 polls to hold slots')
    for (const key of keys) await expectLimitExceeded(key, inbox.id)
    await expectLimitExceeded(await server.extraKey(tenant.organizationId), inbox.id)
    // Another organisation is not affected.
    const other = await server.tenant('other')
    const otherInbox = await newInbox(server, other.key)
    expect((await server.get(`/v1/inboxes/${otherInbox.id}/messages?wait_seconds=1`, other.key)).status).toBe(204)
    for (const p of polls) p.abort()
    await until(() => slots(tenant.key, tenant).org === 0, 'every slot to be freed')
  })
})

describe('refused waits', () => {
  test('a waiting request refused for a bad query or a missing inbox holds no slot', async () => {
    const tenant = await server.tenant()
    const inbox = await newInbox(server, tenant.key)
    for (const [query, code] of <Array<[string, string]>>[
      ['wait_seconds=30&cursor=forged.cursor', 'invalid_cursor'],
      ['wait_seconds=30&include=content&limit=2', 'invalid_include'],
      ['wait_seconds=30&received_after=2026-02-30T00:00:00Z', 'invalid_received_after'],
    ]) {
      const response = await server.get(`/v1/inboxes/${inbox.id}/messages?${query}`, tenant.key)
      expect({ query, code: errorCode(response) }).toEqual({ query, code })
    }
    expect(
      errorCode(await server.get(`/v1/inboxes/inbox_${'0'.repeat(32)}/messages?wait_seconds=30`, tenant.key)),
    ).toBe('inbox_not_found')
    expect(slots(tenant.key, tenant)).toEqual({ key: 0, org: 0 })
    expect(waiting(inbox.id)).toBe(0)
  })
})

describe('disconnects', () => {
  test('a client that disconnects frees its slot at once, and a new poll is admitted', async () => {
    const tenant = await server.tenant()
    const inbox = await newInbox(server, tenant.key)
    const polls = Array.from({ length: 10 }, () => startPoll(server, tenant.key, inbox.id))
    await until(() => slots(tenant.key, tenant).key === 10, '10 polls to hold slots')
    await expectLimitExceeded(tenant.key, inbox.id)

    polls[0]!.abort()
    expect(await polls[0]!.response).toBe('aborted')
    // "At once": the slot and the subscription are gone well before any wait would end (60 s).
    await until(() => slots(tenant.key, tenant).key === 9, 'the aborted poll to free its slot', { timeoutMs: 2_000 })
    expect(waiting(inbox.id)).toBe(9)
    const admitted = await server.get(`/v1/inboxes/${inbox.id}/messages?wait_seconds=1`, tenant.key)
    expect(admitted.status).toBe(204)

    for (const p of polls) p.abort()
    await until(() => slots(tenant.key, tenant).key === 0, 'every slot to be freed', { timeoutMs: 2_000 })
    expect(waiting(inbox.id)).toBe(0)
  })
})

describe('connections silent past HTTP_IDLE_TIMEOUT_SECONDS (1 s here)', () => {
  test(`a silent keep-alive connection is closed, after a long poll too; a ${IDLE_PROOF_SECONDS} s wait is answered 204, a console live stream stays open`, async () => {
    const { keepAliveClosedAfterMs, afterPollClosedAfterMs, poll, streamEvents } = await idleProofs
    // Bun's default of 10 s would close it after 10 to 12 s; ours is 1 s on a 4 s timer.
    expect(keepAliveClosedAfterMs).toBeLessThan(8_000)
    // Not after the poll's own time (its 1 s wait plus 10 s), which Bun would keep otherwise.
    expect(afterPollClosedAfterMs).toBeLessThan(8_000)
    expect(poll).toEqual({ status: 204, text: '' })
    // Still open after the silence: it announces a message stored then.
    expect(streamEvents).toEqual(['ready', 'message_stored'])
  }, 20_000)
})
