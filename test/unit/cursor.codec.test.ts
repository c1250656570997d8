/**
 * Pagination cursors: any position round-trips through its own listing; a cursor is
 * refused (invalid_cursor, never another error) for another listing, under another secret,
 * after any change to it, and for any string we did not issue.
 */
import { describe, expect, setDefaultTimeout, test } from 'bun:test'
import fc from 'fast-check'
import { CursorCodec } from '../../src/core/common/cursor.ts'
import { DomainError } from '../../src/core/common/errors.ts'

// A hang's deadline, not a speed: on a busy machine this file's servers, processes or
// generated cases take well over Bun's default of 5 s.
setDefaultTimeout(30_000)

const codec = new CursorCodec('a'.repeat(64))
const position = fc.record({
  at: fc.string({ unit: 'grapheme', maxLength: 40 }),
  id: fc.string({ unit: 'grapheme', maxLength: 40 }),
})
const listing = fc.string({ maxLength: 30 })

/** The error decode throws, or null when it accepts the cursor. */
function refusal(decode: () => unknown): string | null {
  try {
    decode()
    return null
  } catch (error) {
    return error instanceof DomainError ? error.code : `unexpected ${error}`
  }
}

describe('CursorCodec', () => {
  test('round-trips any position through the same listing', () => {
    fc.assert(
      fc.property(listing, position, (name, at) => {
        const decoded = codec.decode(name, codec.encode(name, at))
        return decoded.at === at.at && decoded.id === at.id
      }),
      { numRuns: 2000 },
    )
  })

  test('another listing or another secret refuses it', () => {
    const other = new CursorCodec('b'.repeat(64))
    fc.assert(
      fc.property(listing, listing, position, (a, b, at) => {
        fc.pre(a !== b)
        const cursor = codec.encode(a, at)
        return (
          refusal(() => codec.decode(b, cursor)) === 'invalid_cursor' &&
          refusal(() => other.decode(a, cursor)) === 'invalid_cursor'
        )
      }),
      { numRuns: 1000 },
    )
  })

  test('any change to a cursor refuses it', () => {
    fc.assert(
      fc.property(listing, position, fc.nat(), fc.string({ minLength: 1, maxLength: 3 }), (name, at, where, insert) => {
        const cursor = codec.encode(name, at)
        const i = where % cursor.length
        const changed = cursor.slice(0, i) + insert + cursor.slice(i + 1)
        fc.pre(changed !== cursor)
        return refusal(() => codec.decode(name, changed)) === 'invalid_cursor'
      }),
      { numRuns: 2000 },
    )
  })

  test('any string we did not issue is refused with invalid_cursor, never another error', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string({ maxLength: 200 }), fc.string({ unit: 'binary', maxLength: 40 })),
        (text) => refusal(() => codec.decode('inbox', text)) === 'invalid_cursor',
      ),
      { numRuns: 1000 },
    )
    expect(refusal(() => codec.decode('inbox', 'x'.repeat(100_000) + '.' + 'y'.repeat(100_000)))).toBe('invalid_cursor')
  })
})
