/**
 * RFC 2047 encoded words: a character split across two words survives, as in Python's email
 * package. The expected strings below are what Python 3.11 gives
 * (`str(email.message_from_string(..., policy=email.policy.default)['subject'])`, and
 * `email.header.decode_header` where that one gives up), except where a comment says why not.
 * The golden fixtures named `encoded-words-*.eml` in test/fixtures/ carry the same shapes through SMTP
 * into subject, from.name and attachment file names.
 */
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { decodeHeaderText } from '../../src/core/inbound/mime/encoded-words.ts'

describe('a character split across two encoded words', () => {
  test('the first base64 word ends in padding', () => {
    expect(decodeHeaderText('=?utf-8?B?44OL4w==?= =?utf-8?B?g6M=?=')).toBe('ニャ')
    // No whitespace between the words at all.
    expect(decodeHeaderText('=?utf-8?B?44OL4w==?==?utf-8?B?g6M=?=')).toBe('ニャ')
    // Folded onto a second line.
    expect(decodeHeaderText('=?utf-8?B?44OL4w==?=\r\n =?utf-8?B?g6M=?=')).toBe('ニャ')
  })

  test('the charset labels differ in case', () => {
    expect(decodeHeaderText('=?utf-8?Q?omre=C5?= =?UTF-8?Q?=BEje?=')).toBe('omrežje')
    expect(decodeHeaderText('=?Utf-8?B?44OL4w==?= =?uTF-8?B?g6M=?=')).toBe('ニャ')
  })

  test('B beside Q in one charset', () => {
    expect(decodeHeaderText('=?utf-8?B?44OL4w==?= =?utf-8?Q?=83=A3?=')).toBe('ニャ')
    expect(decodeHeaderText('=?utf-8?Q?omre=C5?= =?UTF-8?B?vmpl?=')).toBe('omrežje')
  })

  test('a language tag (RFC 2231) does not change the charset', () => {
    expect(decodeHeaderText('=?utf-8*sl?Q?omre=C5?= =?utf-8?Q?=BEje?=')).toBe('omrežje')
  })

  test('a double-byte charset other than UTF-8', () => {
    expect(decodeHeaderText('=?gb2312?B?1tA=?= =?gb2312?B?zsQ=?=')).toBe('中文')
    // Python's default policy gives '�形�' here (it rejoins only UTF-8); its
    // email.header.decode_header joins the bytes of one charset, as we do, and gives 中文.
    expect(decodeHeaderText('=?gb2312?Q?=D6?= =?gb2312?Q?=D0=CE=C4?=')).toBe('中文')
  })
})

describe('neighbours that must stay apart', () => {
  test('different charsets are decoded each on its own', () => {
    expect(decodeHeaderText('=?iso-8859-1?Q?caf=E9?= =?utf-8?Q?=C3=A9t=C3=A9?=')).toBe('caféété')
    expect(decodeHeaderText('=?windows-1250?Q?omre=9E?= =?utf-8?Q?je?=')).toBe('omrežje')
    // The bytes of a split character in two charsets are not one character.
    expect(decodeHeaderText('=?iso-8859-1?Q?=C5?= =?utf-8?Q?=BE?=')).toBe('Å\ufffd')
  })

  test('ISO-2022-JP words, each ending with its own escape, are decoded each on its own', () => {
    // Joined, the WHATWG decoder refuses one escape right after the other (a U+FFFD).
    expect(decodeHeaderText('=?ISO-2022-JP?B?GyRCJUYlOSVIGyhC?=\r\n  =?ISO-2022-JP?B?GyRCJUYlOSVIGyhC?=')).toBe(
      'テストテスト',
    )
  })

  test('text between two words ends the run, and is kept', () => {
    expect(decodeHeaderText('=?utf-8?Q?=C5?= x =?utf-8?Q?=BE?=')).toBe('\ufffd x \ufffd')
    expect(decodeHeaderText('=?utf-8?Q?a?= b =?utf-8?Q?c?=')).toBe('a b c')
  })

  test('whitespace between adjacent words is dropped, beside other text it is kept', () => {
    expect(decodeHeaderText('=?utf-8?Q?a?=  =?utf-8?Q?b?=')).toBe('ab')
    expect(decodeHeaderText('Re: =?utf-8?Q?a?= =?iso-8859-1?Q?b?= end')).toBe('Re: ab end')
  })

  test('a truncated character alone is one replacement character', () => {
    expect(decodeHeaderText('=?utf-8?Q?=E3?= plain')).toBe('\ufffd plain')
  })

  test('text without encoded words, and malformed words, are kept as they are', () => {
    expect(decodeHeaderText('plain =? text ?=')).toBe('plain =? text ?=')
    expect(decodeHeaderText('=?utf-8?X?abc?=')).toBe('=?utf-8?X?abc?=')
  })
})

describe('any UTF-8 text cut at any bytes into words of any encoding and label case', () => {
  const cut = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 }).chain((text) => {
    const bytes = Buffer.from(text, 'utf8')
    return fc.record({
      text: fc.constant(text),
      cuts: fc.uniqueArray(fc.integer({ min: 1, max: Math.max(1, bytes.length - 1) }), { maxLength: 6 }),
      encodings: fc.array(fc.constantFrom('B', 'Q', 'b', 'q'), { minLength: 7, maxLength: 7 }),
      labels: fc.array(fc.constantFrom('utf-8', 'UTF-8', 'Utf-8', 'utf-8*en'), { minLength: 7, maxLength: 7 }),
      separators: fc.array(fc.constantFrom(' ', '', '\r\n ', '\t'), { minLength: 7, maxLength: 7 }),
    })
  })

  const qEncode = (bytes: Buffer): string =>
    [...bytes].map((byte) => `=${byte.toString(16).toUpperCase().padStart(2, '0')}`).join('')

  test('decodes back to the text', () => {
    fc.assert(
      fc.property(cut, ({ text, cuts, encodings, labels, separators }) => {
        const bytes = Buffer.from(text, 'utf8')
        const edges = [0, ...cuts.filter((at) => at < bytes.length).sort((a, b) => a - b), bytes.length]
        const words = edges.slice(1).map((end, i) => {
          const piece = bytes.subarray(edges[i], end)
          const encoding = encodings[i]!
          const encoded = encoding.toUpperCase() === 'B' ? piece.toString('base64') : qEncode(piece)
          return `=?${labels[i]}?${encoding}?${encoded}?=`
        })
        const header = words.map((word, i) => (i === 0 ? word : separators[i] + word)).join('')
        expect(decodeHeaderText(header)).toBe(text)
      }),
      { numRuns: 500 },
    )
  })
})
