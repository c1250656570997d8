/** The rule behind received_at: the clock's time, but at least 1 ms after the inbox's newest message. */
import { expect, test } from 'bun:test'
import { monotonicReceivedAt } from '../../src/core/inbound/received-at.ts'

const T = Date.parse('2026-03-10T12:00:00.000Z')

test('an empty inbox, or one whose newest message is older, takes the clock', () => {
  expect(monotonicReceivedAt(T, undefined)).toBe(T)
  expect(monotonicReceivedAt(T, '2026-03-10T11:59:59.999Z')).toBe(T)
})

test('the same millisecond, or a clock stepped back, gives the newest + 1 ms', () => {
  expect(monotonicReceivedAt(T, '2026-03-10T12:00:00.000Z')).toBe(T + 1)
  expect(monotonicReceivedAt(T - 3_600_000, '2026-03-10T12:00:00.000Z')).toBe(T + 1)
})

test('property: a run of stamps against any clock sequence strictly increases and never falls behind the clock', () => {
  let seed = 7
  const random = () => {
    seed ^= seed << 13
    seed ^= seed >>> 17
    seed ^= seed << 5
    return (seed >>> 0) / 2 ** 32
  }
  for (let run = 0; run < 200; run++) {
    let newest: string | undefined
    let clock = T
    for (let i = 0; i < 50; i++) {
      clock += Math.round((random() - 0.6) * 10_000) // steps back as well as forward
      const at = monotonicReceivedAt(clock, newest)
      if (newest !== undefined) expect(at).toBeGreaterThan(Date.parse(newest))
      expect(at).toBeGreaterThanOrEqual(clock)
      newest = new Date(at).toISOString()
    }
  }
})
