/**
 * PostgreSQL mode's wake-ups, the parts that need no database: the publisher sends a quiet
 * machine's first inbox at once and gathers the rest while one publication is in flight; the
 * payloads stay under NOTIFY's limit; the fallback tells exactly the inboxes whose newest
 * message changed (or that are gone), and a first sighting only when the inbox holds mail.
 */
import { expect, test } from 'bun:test'
import { type InboxReading, startWakeFallback } from '../../src/app/postgres/wake-fallback.ts'
import { MAX_WAKE_PAYLOAD_BYTES, storedPayloads } from '../../src/storage/postgres/wake-bus.ts'
import { createWakePublisher } from '../../src/storage/postgres/wake-publisher.ts'

/** A send whose answers the test releases one by one. */
function heldSends() {
  const batches: string[][] = []
  const answers: (() => void)[] = []
  const send = (ids: string[]) => {
    batches.push(ids)
    return new Promise<void>((resolve) => answers.push(resolve))
  }
  return { batches, send, answerNext: () => answers.shift()?.() }
}

test('the first inbox of a quiet machine goes out at once; those stored meanwhile go out together in the next publication', async () => {
  const sends = heldSends()
  const publisher = createWakePublisher(sends.send, () => {}, 0)
  publisher.publish('inb_first')
  expect(sends.batches).toEqual([['inb_first']])
  for (let i = 0; i < 50; i++) publisher.publish(`inb_${i % 40}`) // repeats count once
  expect(sends.batches).toHaveLength(1)
  sends.answerNext()
  await Bun.sleep(0)
  expect(sends.batches).toHaveLength(2)
  expect(sends.batches[1]).toHaveLength(40)
  sends.answerNext()
  await publisher.flush()
  expect(publisher.sent()).toBe(2)
})

test('publications are at least the interval apart, and a failed one is reported and dropped, not retried', async () => {
  const errors: number[] = []
  let calls = 0
  const publisher = createWakePublisher(
    async () => {
      calls++
      throw new Error('the database went away')
    },
    (_error, inboxes) => errors.push(inboxes),
    30,
  )
  publisher.publish('inb_a')
  await Bun.sleep(0)
  publisher.publish('inb_b')
  publisher.publish('inb_c')
  await Bun.sleep(0)
  // The interval has not passed: the second publication waits (this proves nothing was sent yet).
  expect(calls).toBe(1)
  await publisher.flush()
  expect(calls).toBe(2)
  expect(errors).toEqual([1, 2])
})

test('payloads name every inbox once, in as few NOTIFYs as fit, each under the 8,000-byte limit', () => {
  const ids = Array.from({ length: 1_000 }, (_, i) => `inb_${i.toString(16).padStart(32, '0')}`)
  const payloads = storedPayloads(ids)
  expect(payloads.length).toBeGreaterThan(1)
  for (const payload of payloads) expect(Buffer.byteLength(payload)).toBeLessThanOrEqual(MAX_WAKE_PAYLOAD_BYTES)
  expect(payloads.flatMap((payload) => payload.split(' '))).toEqual(ids)
  // As few as fit: every payload but the last is full to within one id.
  for (const payload of payloads.slice(0, -1)) expect(payload.length).toBeGreaterThan(MAX_WAKE_PAYLOAD_BYTES - 38)
  expect(storedPayloads(['inb_one'])).toEqual(['inb_one'])
  expect(storedPayloads([])).toEqual([])
})

test('the fallback tells the inboxes whose newest message changed or that are gone, and a first sighting only when it holds mail', async () => {
  const database = new Map<string, InboxReading>([
    ['inb_empty', { exists: true, newest: null }],
    ['inb_full', { exists: true, newest: '2026-03-10 09:15:20.001+00' }],
    ['inb_quiet', { exists: true, newest: '2026-03-10 09:15:20.002+00' }],
  ])
  let watched = ['inb_empty', 'inb_full', 'inb_quiet', 'inb_never']
  const heard: string[] = []
  const fallback = startWakeFallback(
    {
      watched: () => watched,
      read: async (ids) => new Map(ids.flatMap((id) => (database.has(id) ? [[id, database.get(id)!] as const] : []))),
      deliver: (id, event) => heard.push(`${event} ${id}`),
      onError: () => {},
    },
    60_000,
  )
  try {
    // First sighting: a waiter may have missed a message only where there is one; an inbox
    // never seen to exist is not told it was deleted.
    await fallback.recheck()
    expect(heard.splice(0)).toEqual(['message_stored inb_full', 'message_stored inb_quiet'])
    // Nothing changed: nobody is told.
    await fallback.recheck()
    expect(heard.splice(0)).toEqual([])
    // A message arrives unheard in one inbox, another is deleted.
    database.set('inb_empty', { exists: true, newest: '2026-03-10 09:15:21.000+00' })
    database.delete('inb_full')
    await fallback.recheck()
    expect(heard.splice(0)).toEqual(['message_stored inb_empty', 'inbox_deleted inb_full'])
    await fallback.recheck()
    expect(heard.splice(0)).toEqual([])
    // Watched no more, then again: its reading starts afresh.
    watched = ['inb_quiet']
    await fallback.recheck()
    watched = ['inb_quiet', 'inb_empty']
    await fallback.recheck()
    expect(heard.splice(0)).toEqual(['message_stored inb_empty'])
  } finally {
    fallback.stop()
  }
})

test('a reading that fails is reported and changes nothing', async () => {
  const errors: unknown[] = []
  let fail = false
  let newest = 'a'
  const heard: string[] = []
  const fallback = startWakeFallback(
    {
      watched: () => ['inb_x'],
      read: async () => {
        if (fail) throw new Error('away')
        return new Map([['inb_x', { exists: true, newest }]])
      },
      deliver: (id, event) => heard.push(`${event} ${id}`),
      onError: (error) => errors.push(error),
    },
    60_000,
  )
  try {
    await fallback.recheck()
    fail = true
    newest = 'b'
    await fallback.recheck()
    expect(errors).toHaveLength(1)
    fail = false
    await fallback.recheck()
    expect(heard).toEqual(['message_stored inb_x', 'message_stored inb_x'])
  } finally {
    fallback.stop()
  }
})
