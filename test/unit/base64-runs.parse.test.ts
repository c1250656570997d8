/**
 * The patched postal-mime (patches/) hands the lines of a base64 body to its decoder in runs,
 * up to the next line that starts with `--` (found by a native search), instead of one line at
 * a time: the per-line work was most of the CPU of parsing a message with large attachments
 * (bench/README.md, big-mail flood). The runs must change nothing: for any message, the
 * parse equals postal-mime's own line-by-line reading of the same bytes (the run path turned
 * off in a subclass), whatever the line breaks (CRLF, bare LF, bare CR, blank lines), lines
 * that start with `-` or `--` without being a boundary, boundaries with trailing blanks,
 * nested multiparts, padding, stray bytes, and an input that ends without a line break.
 */
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { FaithfulPostalMime } from '../../src/core/inbound/mime/parser.ts'

/** postal-mime's own reading: every line through processLine. */
class LineByLine extends FaithfulPostalMime {
  readBase64Run(): boolean {
    return false
  }
}

const sha256 = (bytes: Uint8Array) => new Bun.CryptoHasher('sha256').update(bytes).digest('hex')

/** The parse as text, each attachment's bytes as their SHA-256 (a mismatch stays readable). */
const asJson = (value: unknown) =>
  JSON.stringify(value, function (key, v) {
    const bytes = (this as Record<string, unknown>)[key]
    return bytes instanceof ArrayBuffer || bytes instanceof Uint8Array
      ? `sha256:${sha256(new Uint8Array(bytes as ArrayBuffer))}`
      : v
  })

async function parsedBoth(raw: Buffer): Promise<[string, string]> {
  const read = (parser: FaithfulPostalMime) =>
    parser.parse(raw).then(asJson, (error: Error) => `threw ${error.message}`)
  return [await read(new FaithfulPostalMime()), await read(new LineByLine())]
}

const b64Char = fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/')
/** A base64 body's pieces: runs of letters, padding, every kind of line break, lines led by dashes. */
const bodyPiece = fc.oneof(
  { weight: 12, arbitrary: fc.array(b64Char, { minLength: 1, maxLength: 80 }).map((c) => c.join('')) },
  { weight: 6, arbitrary: fc.constant('\r\n') },
  { weight: 2, arbitrary: fc.constantFrom('\n', '\r', '\r\r\n', '\r\n\r\n') },
  { weight: 2, arbitrary: fc.constantFrom('=', '==', '\r\n=\r\n') },
  { weight: 2, arbitrary: fc.constantFrom('\r\n-', '\r\n--', '\r\n--x', '\r\n---', '\r\n--a \t', '\r\n--b') },
  { weight: 1, arbitrary: fc.constantFrom(' ', '\t', '*', '-', '_', '.', '\xe9', '\x00') },
)
const body = fc.array(bodyPiece, { maxLength: 60 }).map((pieces) => pieces.join(''))

const part = (content: string, headers = 'Content-Type: application/pdf\r\nContent-Transfer-Encoding: base64') =>
  `${headers}\r\nContent-Disposition: attachment; filename="f.pdf"\r\n\r\n${content}`

describe('base64 bodies read in runs parse as line by line', () => {
  test('a large attachment, in every usual line shape', async () => {
    const bytes = Buffer.from(Array.from({ length: 200_000 }, (_, i) => (i * 131 + (i >> 7)) % 256))
    const encoded = bytes.toString('base64')
    for (const lines of [
      encoded.replace(/.{1,76}/g, '$&\r\n'),
      encoded.replace(/.{1,76}/g, '$&\n'),
      encoded.replace(/.{1,76}/g, '$&\r\n\r\n'),
      encoded.replace(/.{1,76}/g, '$&\r\n').trimEnd(),
    ]) {
      const raw = Buffer.from(
        `Content-Type: multipart/mixed; boundary="a"\r\n\r\n--a\r\n${part(lines)}\r\n--a--\r\n`,
        'latin1',
      )
      const [runs, lineByLine] = await parsedBoth(raw)
      expect(runs).toBe(lineByLine)
      expect(runs).toContain(`sha256:${sha256(bytes)}`)
      // The whole message a base64 body, ending with or without a line break.
      const single = Buffer.from(part(lines), 'latin1')
      const [singleRuns, singleLines] = await parsedBoth(single)
      expect(singleRuns).toBe(singleLines)
    }
  })

  test('any message of base64 parts, nested multiparts and lines that look like boundaries', async () => {
    const message = fc
      .record({
        first: body,
        second: body,
        nested: body,
        top: fc.boolean(),
        ending: fc.constantFrom('\r\n', '', '\n', '\r\n\r\n'),
        close: fc.constantFrom('--a--', '--a-- ', '--a--\t', ''),
      })
      .map(({ first, second, nested, top, ending, close }) =>
        top
          ? part(first) + ending
          : [
              'Content-Type: multipart/mixed; boundary="a"',
              '',
              '--a',
              part(first),
              '--a \t',
              part(second, 'Content-Type: application/octet-stream\r\nContent-Transfer-Encoding: BASE64'),
              '--a',
              'Content-Type: multipart/related; boundary="b"',
              '',
              '--b',
              part(nested),
              '--b--',
              close,
            ].join('\r\n') + ending,
      )
    await fc.assert(
      fc.asyncProperty(message, async (text) => {
        const [runs, lineByLine] = await parsedBoth(Buffer.from(text, 'latin1'))
        expect(runs).toBe(lineByLine)
      }),
      { numRuns: 500 },
    )
  })
})
