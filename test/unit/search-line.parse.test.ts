/** The console's search line: what each operator becomes, and where a line that cannot be read goes wrong. */
import { expect, test } from 'bun:test'
import fc from 'fast-check'
import { MAX_LINE, parseSearchLine, SearchLineError, tokenize } from '../../src/core/messages/search-line.ts'

const errorOf = (line: string) => {
  try {
    parseSearchLine(line)
  } catch (error) {
    if (error instanceof SearchLineError) return { at: error.at, message: error.message }
    throw error
  }
  throw new Error(`expected ${line} to be refused`)
}

test('operators, words, phrases and negation', () => {
  expect(parseSearchLine('')).toEqual({})
  expect(parseSearchLine('   ')).toEqual({})
  expect(parseSearchLine('from:Billing@Shop.example')).toEqual({ all: [{ sender: 'billing@shop.example' }] })
  expect(parseSearchLine('from:shop.example from:@shop.example')).toEqual({
    all: [{ senderContains: 'shop.example' }, { senderContains: '@shop.example' }],
  })
  expect(parseSearchLine('to:CI subject:"Order  Shipped"')).toEqual({
    all: [{ recipient: 'ci' }, { subject: 'order  shipped' }],
  })
  expect(parseSearchLine('has:attachment is:unread -is:read')).toEqual({
    all: [{ hasAttachment: true }, { unread: true }],
    none: [{ unread: false }],
  })
  expect(parseSearchLine('after:2026-11-25 before:"2026-11-26 14:30"')).toEqual({
    all: [{ receivedAfter: '2026-11-25T00:00:00.000Z' }, { receivedBefore: '2026-11-26T14:30:00.000Z' }],
  })
  expect(parseSearchLine('larger:100k smaller:2.5M larger:512')).toEqual({
    all: [{ largerThan: 102400 }, { smallerThan: 2621440 }, { largerThan: 512 }],
  })
  expect(parseSearchLine('Reset "your  Password" -newsletter -"un subscribe"')).toEqual({
    all: [{ text: 'reset' }, { text: 'your password' }],
    none: [{ text: 'newsletter' }, { text: 'un subscribe' }],
  })
  expect(parseSearchLine('"re: hello" a-b')).toEqual({ all: [{ text: 're: hello' }, { text: 'a-b' }] })
  expect(parseSearchLine('FROM:x@y.example')).toEqual({ all: [{ sender: 'x@y.example' }] })
})

test('a line that cannot be read says at which character', () => {
  expect(errorOf('hello foo:bar')).toMatchObject({ at: 7 })
  expect(errorOf('hello foo:bar').message).toContain('"foo:" is not an operator')
  expect(errorOf('subject:"open')).toMatchObject({ at: 9 })
  expect(errorOf('subject:"open').message).toContain('not closed')
  expect(errorOf('a from:')).toMatchObject({ at: 3 })
  expect(errorOf('a - b')).toMatchObject({ at: 3 })
  expect(errorOf('is:new').message).toContain('"unread" or "read"')
  expect(errorOf('has:pdf').message).toContain('has:')
  expect(errorOf('after:yesterday')).toMatchObject({ at: 1 })
  expect(errorOf('x larger:big')).toMatchObject({ at: 3 })
  expect(errorOf('"a"b')).toMatchObject({ at: 4 })
  expect(errorOf('a"b')).toMatchObject({ at: 2 })
  expect(errorOf('""')).toMatchObject({ at: 1 })
  expect(errorOf('a\u0000b')).toMatchObject({ at: 2 })
  expect(errorOf('a\u200bb')).toMatchObject({ at: 2 })
  expect(errorOf('x'.repeat(MAX_LINE + 1)).message).toContain(`at most ${MAX_LINE}`)
  expect(errorOf('a b c d e f g h i j k l m').message).toContain('at most 12 terms')
  expect(errorOf('subject:' + 'é'.repeat(101)).message).toContain('200 bytes')
  expect(errorOf('x'.repeat(101)).message).toContain('100 bytes')
  expect(errorOf('from:a@b@c').message).toContain('from:')
})

test('any line either parses or is refused with a position inside it (never another error)', () => {
  fc.assert(
    fc.property(
      fc.string({
        maxLength: 80,
        unit: fc.constantFrom('a', ' ', '"', '-', ':', 'from', 'is', 'x@y', '1', 'k', '\t', 'é'),
      }),
      (line) => {
        try {
          const terms = tokenize(line)
          expect(terms.length).toBeLessThanOrEqual(12)
          parseSearchLine(line)
        } catch (error) {
          expect(error).toBeInstanceOf(SearchLineError)
          const at = (error as SearchLineError).at
          expect(at).toBeGreaterThanOrEqual(1)
          expect(at).toBeLessThanOrEqual(Math.max(line.length, 1))
        }
      },
    ),
    { numRuns: 2000 },
  )
})
