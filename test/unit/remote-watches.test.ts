/**
 * Which inboxes the other machines watch (src/app/postgres/remote-watches.ts), on an injected
 * clock: a stored message is published only while another machine's announcement counts, or
 * while this machine may have missed announcements; a store an announcement arrives after is
 * published when it arrives.
 */
import { expect, test } from 'bun:test'
import { createRemoteWatches } from '../../src/app/postgres/remote-watches.ts'
import { MAX_WAKE_PAYLOAD_BYTES, watchingPayloads } from '../../src/storage/postgres/wake-bus.ts'

const TTL = 3_000
const BLIND = 1_500

test('before its first LISTEN and for a while after it, a machine publishes everything; then only what another machine watches', () => {
  const watches = createRemoteWatches(TTL, BLIND)
  expect(watches.stored('inb_a', 0)).toBe(true) // nothing heard yet
  watches.blind(100)
  expect(watches.stored('inb_a', 100 + BLIND - 1)).toBe(true)
  expect(watches.stored('inb_a', 100 + BLIND)).toBe(false)
  watches.heard(['inb_b'], 5_000)
  expect(watches.stored('inb_b', 5_001)).toBe(true)
  expect(watches.stored('inb_a', 5_001)).toBe(false)
})

test('an announcement counts for the ttl unless renewed; a reconnection makes the machine blind again', () => {
  const watches = createRemoteWatches(TTL, BLIND)
  watches.blind(0)
  watches.heard(['inb_a'], 10_000)
  expect(watches.stored('inb_a', 10_000 + TTL - 1)).toBe(true)
  watches.heard(['inb_a'], 12_000) // a refresh
  expect(watches.stored('inb_a', 10_000 + TTL + 1)).toBe(true)
  expect(watches.stored('inb_a', 12_000 + TTL)).toBe(false)
  watches.blind(20_000)
  expect(watches.stored('inb_z', 20_001)).toBe(true)
})

test('an announcement heard after a store it could not see names that store for publication at once, within the ttl only', () => {
  const watches = createRemoteWatches(TTL, BLIND)
  watches.blind(0)
  expect(watches.stored('inb_late', 10_000)).toBe(false)
  expect(watches.stored('inb_old', 6_000)).toBe(false)
  expect(watches.heard(['inb_late', 'inb_old', 'inb_never'], 10_050)).toEqual(['inb_late'])
  // Published once: the watcher's refresh repeats no publication, and nor does a published store.
  expect(watches.heard(['inb_late'], 10_100)).toEqual([])
  expect(watches.stored('inb_late', 10_200)).toBe(true)
  expect(watches.heard(['inb_late'], 10_300)).toEqual([])
  // Many stores and announcements later, the memory holds only the last ttl's.
  for (let i = 0; i < 1_000; i++) watches.stored(`inb_${i}`, 20_000 + i)
  expect(watches.heard(['inb_late'], 30_000)).toEqual([])
})

test('announcements name every inbox once, under the payload limit, with no space (never read as a publication)', () => {
  const ids = Array.from({ length: 700 }, (_, i) => `inb_${String(i).padStart(26, '0')}`)
  const payloads = watchingPayloads('machine a:1', ids)
  expect(payloads.length).toBeGreaterThan(1)
  const named: string[] = []
  for (const payload of payloads) {
    expect(payload.length).toBeLessThan(MAX_WAKE_PAYLOAD_BYTES)
    expect(payload).not.toContain(' ')
    expect(payload.startsWith(`watching:${encodeURIComponent('machine a:1')}:`)).toBe(true)
    named.push(...payload.slice(payload.lastIndexOf(':') + 1).split(','))
  }
  expect(named).toEqual(ids)
})

test("a long polls' once-watch is used up by one publication; the stores after it wait for the next announcement", () => {
  const watches = createRemoteWatches(TTL, BLIND)
  watches.blind(0)
  expect(watches.heard(['inb_busy'], 10_000, true)).toEqual([])
  expect(watches.stored('inb_busy', 10_001)).toBe(true) // wakes the polls
  expect(watches.stored('inb_busy', 10_002)).toBe(false) // nobody left to wake, as far as known
  expect(watches.stored('inb_busy', 10_003)).toBe(false)
  // A poll announces itself (a new one, or one woken for nothing it wanted): those stores at once, and that used it up.
  expect(watches.heard(['inb_busy'], 10_250, true)).toEqual(['inb_busy'])
  expect(watches.stored('inb_busy', 10_251)).toBe(false)
  expect(watches.heard(['inb_busy'], 10_500, true)).toEqual(['inb_busy'])
  // An announcement with nothing to publish stays until a store uses it, within the ttl.
  expect(watches.heard(['inb_busy'], 10_600, true)).toEqual([])
  expect(watches.stored('inb_busy', 10_600 + TTL - 1)).toBe(true)
  expect(watches.heard(['inb_busy'], 20_000, true)).toEqual([])
  expect(watches.stored('inb_busy', 20_000 + TTL)).toBe(false)
})

test('a lasting watch (a live view) is used up by no publication, whatever once-watches come and go beside it', () => {
  const watches = createRemoteWatches(TTL, BLIND)
  watches.blind(0)
  watches.heard(['inb_viewed'], 10_000)
  watches.heard(['inb_viewed'], 10_001, true)
  for (let at = 10_002; at < 10_010; at++) expect(watches.stored('inb_viewed', at)).toBe(true)
})

test('a once-announcement is marked so that it reads back as such, and a marked origin is still a valid origin to an older reader', () => {
  const [payload] = watchingPayloads('machine a:1', ['inb_x'], true)
  expect(payload).toBe(`watching:${encodeURIComponent('machine a:1')};once:inb_x`)
  // The previous version decoded everything before the first colon as the origin: another machine's.
  const origin = decodeURIComponent(payload!.slice('watching:'.length, payload!.indexOf(':', 'watching:'.length)))
  expect(origin).toBe('machine a:1;once')
})
