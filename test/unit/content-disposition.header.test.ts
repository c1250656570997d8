/**
 * The download's Content-Disposition (RFC 6266) for any stored filename: always a valid
 * ASCII header value, always `attachment`, with a `filename*` that decodes back to exactly
 * the stored name and a plain `filename` fallback that cannot break out of its quotes.
 */
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { contentDisposition } from '../../src/http/routes/attachments.ts'

const SHAPE = /^attachment; filename="([\x20-\x7e]*)"; filename\*=UTF-8''([A-Za-z0-9!#$&+.^_`|~%-]*)$/

describe('contentDisposition', () => {
  test.each([
    ['report.pdf', 'attachment; filename="report.pdf"; filename*=UTF-8\'\'report.pdf'],
    [
      'naïve résumé.txt',
      'attachment; filename="na_ve r_sum_.txt"; filename*=UTF-8\'\'na%C3%AFve%20r%C3%A9sum%C3%A9.txt',
    ],
    ['a"b;c\\d%e.txt', 'attachment; filename="a_b_c_d_e.txt"; filename*=UTF-8\'\'a%22b%3Bc%5Cd%25e.txt'],
    ['   ', 'attachment; filename="attachment"; filename*=UTF-8\'\'%20%20%20'],
    ["it's (1)*.txt", "attachment; filename=\"it's (1)*.txt\"; filename*=UTF-8''it%27s%20%281%29%2A.txt"],
  ])('%j', (filename, header) => {
    expect(contentDisposition(filename)).toBe(header)
  })

  test('any well-formed name: a valid header whose filename* decodes to the name itself', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 60 }), (filename) => {
        const match = SHAPE.exec(contentDisposition(filename))
        return match !== null && decodeURIComponent(match[2]!) === filename && !/["\\;%]/.test(match[1]!)
      }),
      { numRuns: 3000 },
    )
  })

  test('CR, LF and NUL never reach the header', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom('a', '\r', '\n', '\0', ' ', 'é'), maxLength: 30 }),
        (filename) => !/[\r\n\0]/.test(contentDisposition(filename)),
      ),
    )
  })
})
