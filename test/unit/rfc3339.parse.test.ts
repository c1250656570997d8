/**
 * `received_after` parsing (RFC 3339, strict): every instant written in any offset and
 * precision reads back as that instant, impossible dates and other shapes are refused
 * (null, never an exception), and the work stays linear in the input.
 */
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { parseRfc3339 } from '../../src/core/messages/list-messages.ts'

const pad = (n: number, width = 2) => String(Math.abs(n)).padStart(width, '0')
const millisOf = (ms: number) => ((ms % 1000) + 1000) % 1000

/** An instant written as RFC 3339 in the given offset (minutes east of UTC). */
function format(ms: number, offsetMinutes: number, fraction: string): string {
  const local = new Date(ms + offsetMinutes * 60_000)
  const sign = offsetMinutes < 0 ? '-' : '+'
  const offset =
    offsetMinutes === 0
      ? 'Z'
      : `${sign}${pad(Math.trunc(Math.abs(offsetMinutes) / 60))}:${pad(Math.abs(offsetMinutes) % 60)}`
  const date = `${pad(local.getUTCFullYear(), 4)}-${pad(local.getUTCMonth() + 1)}-${pad(local.getUTCDate())}`
  return `${date}T${pad(local.getUTCHours())}:${pad(local.getUTCMinutes())}:${pad(local.getUTCSeconds())}${fraction}${offset}`
}

const instant = fc.integer({ min: Date.UTC(1000, 0, 1), max: Date.UTC(9998, 11, 31) })
const offset = fc.integer({ min: -23 * 60 - 59, max: 23 * 60 + 59 })

describe('parseRfc3339', () => {
  test('reads back any instant, in any offset, to the millisecond', () => {
    fc.assert(
      fc.property(instant, offset, (ms, minutes) => {
        const millis = millisOf(ms)
        return (
          parseRfc3339(format(ms, minutes, `.${pad(millis, 3)}`)) === ms &&
          parseRfc3339(format(ms - millis, minutes, '')) === ms - millis
        )
      }),
      { numRuns: 2000 },
    )
  })

  test('a fraction finer than a millisecond rounds up, so "at or after" keeps its meaning', () => {
    fc.assert(
      fc.property(instant, fc.stringMatching(/^[0-9]{1,6}$/), (ms, extra) => {
        const whole = ms - millisOf(ms)
        const parsed = parseRfc3339(format(whole, 0, `.${pad(millisOf(ms), 3)}${extra}`))
        return parsed === ms + (/[1-9]/.test(extra) ? 1 : 0)
      }),
    )
  })

  test.each([
    ['2026-02-29T00:00:00Z', null],
    ['2028-02-29T00:00:00Z', Date.UTC(2028, 1, 29)],
    ['2026-13-01T00:00:00Z', null],
    ['2026-04-31T00:00:00Z', null],
    ['2026-01-01T24:00:00Z', null],
    ['2026-01-01T00:60:00Z', null],
    ['2026-01-01T00:00:61Z', null],
    ['2016-12-31T23:59:60Z', Date.UTC(2017, 0, 1)],
    ['2026-01-01T00:00:00+24:00', null],
    ['2026-01-01t00:00:00z', Date.UTC(2026, 0, 1)],
    ['2026-01-01 00:00:00Z', Date.UTC(2026, 0, 1)],
    ['0099-01-01T00:00:00Z', Date.parse('0099-01-01T00:00:00.000Z')],
    ['2026-01-01T00:00:00', null],
    ['2026-01-01', null],
    ['', null],
  ])('%s → %p', (text, expected) => {
    expect(parseRfc3339(text)).toBe(expected)
  })

  test('anything else is null, never an exception', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 40 }), (text) => {
        const parsed = parseRfc3339(text)
        return parsed === null || Number.isFinite(parsed)
      }),
      { numRuns: 3000 },
    )
  })

  test('a long hostile value is refused in linear time', () => {
    const texts = [
      '2026-01-01T00:00:00.' + '1'.repeat(1_000_000) + 'Z',
      '9'.repeat(1_000_000),
      '2026-01-01T00:00:00+' + '0'.repeat(1_000_000),
    ]
    const before = process.threadCpuUsage()
    for (const text of texts) expect(parseRfc3339(text)).toBeNull()
    const used = process.threadCpuUsage(before)
    expect((used.user + used.system) / 1000).toBeLessThan(100)
  })
})
