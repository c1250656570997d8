/**
 * createInbox's prefix rules: for any input, normalizePrefix either returns the ASCII-
 * lowercased prefix, which then obeys the pattern, the length and the reserved names, or
 * refuses it with invalid_prefix (never another error). Generated local parts always pass.
 */
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { DomainError } from '../../src/core/common/errors.ts'
import {
  generateLocalPart,
  normalizePrefix,
  PREFIX_PATTERN,
  RESERVED_LOCAL_PARTS,
} from '../../src/core/inboxes/local-part.ts'

function outcome(input: unknown): { ok: string } | { code: string } {
  try {
    return { ok: normalizePrefix(input) }
  } catch (error) {
    return { code: error instanceof DomainError ? error.code : `unexpected ${error}` }
  }
}

const asciiLower = (s: string) => s.replace(/[A-Z]/g, (c) => c.toLowerCase())
const valid = fc.stringMatching(/^[a-zA-Z0-9][a-zA-Z0-9-]{1,38}[a-zA-Z0-9]$/)

describe('normalizePrefix', () => {
  test('any input: an accepted prefix is the input lowercased and obeys every rule; anything else is invalid_prefix', () => {
    const input = fc.oneof(
      fc.string({ maxLength: 50 }),
      fc.string({ unit: 'binary', maxLength: 50 }),
      valid,
      fc.constantFrom(...RESERVED_LOCAL_PARTS),
      fc.anything(),
    )
    fc.assert(
      fc.property(input, (value) => {
        const result = outcome(value)
        if ('code' in result) return result.code === 'invalid_prefix'
        return (
          typeof value === 'string' &&
          result.ok === asciiLower(value) &&
          PREFIX_PATTERN.test(result.ok) &&
          result.ok.length >= 3 &&
          result.ok.length <= 40 &&
          !RESERVED_LOCAL_PARTS.has(result.ok)
        )
      }),
      { numRuns: 5000 },
    )
  })

  test('every well-shaped prefix that is not reserved is accepted, in any ASCII case', () => {
    fc.assert(
      fc.property(valid, (value) => {
        fc.pre(!RESERVED_LOCAL_PARTS.has(asciiLower(value)))
        const result = outcome(value)
        return 'ok' in result && result.ok === asciiLower(value)
      }),
      { numRuns: 3000 },
    )
  })

  test.each([
    ['Sign-Up-01', 'sign-up-01'],
    ['ab', null],
    ['a'.repeat(41), null],
    ['-abc', null],
    ['abc-', null],
    ['a_b', null],
    ['\u212Aelvin', null], // the Kelvin sign lowercases to "k" outside ASCII: refused
    ['POSTMASTER', null],
    ['no-reply', null],
    ['pigeonhole', null],
  ])('%j → %p', (input, expected) => {
    expect(outcome(input)).toEqual(expected === null ? { code: 'invalid_prefix' } : { ok: expected })
  })

  test('generated local parts have the word-word-hex shape and pass the rules themselves', () => {
    for (let i = 0; i < 500; i++) {
      const local = generateLocalPart()
      expect(local).toMatch(/^[a-z]+-[a-z]+-[0-9a-f]{16}$/)
      expect(outcome(local)).toEqual({ ok: local })
    }
  })
})
