/**
 * Concurrent long polls: 10 per key and 30 per organisation (429 long_poll_limit_exceeded
 * for the next one), and a disconnecting client frees its slot at once.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { errorCode, type TestServer, type Tenant } from '../support/harness.ts'
import { newInbox, principalOf, startRoomyServer, until } from '../support/messages.ts'

let server: TestServer

beforeAll(async () => {
  server = await startRoomyServer()
})
afterAll(() => server.stop())

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

const slots = (key: string, tenant: Tenant) => server.app.services.longPolls.count(principalOf(key, tenant.organizationId))

describe('limits', () => {
  test('the 11th concurrent wait of one key is refused; non-waiting reads still work', async () => {
    const tenant = server.tenant()
    const inbox = await newInbox(server, tenant.key)
    const polls = Array.from({ length: 10 }, () => startPoll(server, tenant.key, inbox.id))
    await until(() => slots(tenant.key, tenant).key === 10, '10 polls to hold slots')
    await expectLimitExceeded(tenant.key, inbox.id)
    expect((await server.get(`/v1/inboxes/${inbox.id}/messages`, tenant.key)).status).toBe(200)
    // Another key of the same organisation still has its own 10.
    const second = server.extraKey(tenant.organizationId)
    const more = startPoll(server, second, inbox.id)
    await until(() => slots(second, tenant).key === 1, 'the other key to hold a slot')
    for (const p of [...polls, more]) p.abort()
    await until(() => slots(tenant.key, tenant).org === 0, 'every slot to be freed')
  })

  test('the 31st concurrent wait of one organisation is refused, whatever key asks', async () => {
    const tenant = server.tenant()
    const inbox = await newInbox(server, tenant.key)
    const keys = [tenant.key, server.extraKey(tenant.organizationId), server.extraKey(tenant.organizationId), server.extraKey(tenant.organizationId)]
    // 8 + 8 + 7 + 7 = 30: no key is at its own limit of 10.
    const polls = keys.flatMap((key, i) => Array.from({ length: i < 2 ? 8 : 7 }, () => startPoll(server, key, inbox.id)))
    await until(() => slots(tenant.key, tenant).org === 30, '30 polls to hold slots')
    for (const key of keys) await expectLimitExceeded(key, inbox.id)
    await expectLimitExceeded(server.extraKey(tenant.organizationId), inbox.id)
    // Another organisation is not affected.
    const other = server.tenant('other')
    const otherInbox = await newInbox(server, other.key)
    expect((await server.get(`/v1/inboxes/${otherInbox.id}/messages?wait_seconds=1`, other.key)).status).toBe(204)
    for (const p of polls) p.abort()
    await until(() => slots(tenant.key, tenant).org === 0, 'every slot to be freed')
  })
})

describe('refused waits', () => {
  test('a waiting request refused for a bad query or a missing inbox holds no slot', async () => {
    const tenant = server.tenant()
    const inbox = await newInbox(server, tenant.key)
    for (const [query, code] of <Array<[string, string]>>[
      ['wait_seconds=30&cursor=forged.cursor', 'invalid_cursor'],
      ['wait_seconds=30&include=content&limit=2', 'invalid_include'],
      ['wait_seconds=30&received_after=2026-02-30T00:00:00Z', 'invalid_received_after'],
    ]) {
      const response = await server.get(`/v1/inboxes/${inbox.id}/messages?${query}`, tenant.key)
      expect({ query, code: errorCode(response) }).toEqual({ query, code })
    }
    expect(errorCode(await server.get(`/v1/inboxes/inbox_${'0'.repeat(32)}/messages?wait_seconds=30`, tenant.key))).toBe('inbox_not_found')
    expect(slots(tenant.key, tenant)).toEqual({ key: 0, org: 0 })
    expect(server.app.services.notifier.listenerCount(inbox.id)).toBe(0)
  })
})

describe('disconnects', () => {
  test('a client that disconnects frees its slot at once, and a new poll is admitted', async () => {
    const tenant = server.tenant()
    const inbox = await newInbox(server, tenant.key)
    const polls = Array.from({ length: 10 }, () => startPoll(server, tenant.key, inbox.id))
    await until(() => slots(tenant.key, tenant).key === 10, '10 polls to hold slots')
    await expectLimitExceeded(tenant.key, inbox.id)

    polls[0]!.abort()
    expect(await polls[0]!.response).toBe('aborted')
    // "At once": the slot and the subscription are gone well before any wait would end (60 s).
    await until(() => slots(tenant.key, tenant).key === 9, 'the aborted poll to free its slot', 2_000)
    expect(server.app.services.notifier.listenerCount(inbox.id)).toBe(9)
    const admitted = await server.get(`/v1/inboxes/${inbox.id}/messages?wait_seconds=1`, tenant.key)
    expect(admitted.status).toBe(204)

    for (const p of polls) p.abort()
    await until(() => slots(tenant.key, tenant).key === 0, 'every slot to be freed', 2_000)
    expect(server.app.services.notifier.listenerCount(inbox.id)).toBe(0)
  })
})
