/**
 * A base64 part's bytes, as the patched postal-mime decodes them (patches/: the lines kept
 * and decoded once by the runtime's native decoder, the unit-by-unit path for parts padded
 * inside): equal, for any body, to the rule the parser always had, written out here on its
 * own. What is not base64 is dropped; each run of `=` ends a unit, decoded on its own; a
 * unit's lone last character carries no byte.
 */
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import PostalMime from 'postal-mime'

function expected(body: string): Buffer {
  const units = body.replace(/[^A-Za-z0-9+/=]+/g, '').split(/=+/)
  return Buffer.concat(
    units.map((unit) => Buffer.from(unit.slice(0, unit.length - (unit.length % 4 === 1 ? 1 : 0)), 'base64')),
  )
}

async function decoded(body: string): Promise<Buffer> {
  const raw = Buffer.from(
    [
      'Content-Type: multipart/mixed; boundary="b"',
      '',
      '--b',
      'Content-Type: application/octet-stream',
      'Content-Transfer-Encoding: base64',
      'Content-Disposition: attachment; filename="x.bin"',
      '',
      body,
      '--b--',
      '',
    ].join('\r\n'),
    'latin1',
  )
  const email = await PostalMime.parse(raw, { attachmentEncoding: 'arraybuffer' })
  return Buffer.from(email.attachments[0]!.content as ArrayBuffer)
}

describe('a base64 part decodes as the rule says', () => {
  test('the usual shapes', async () => {
    const bytes = Buffer.from(Array.from({ length: 3000 }, (_, i) => (i * 31) % 256))
    const lines = bytes.toString('base64').replace(/.{1,76}/g, '$&\r\n')
    expect(await decoded(lines)).toEqual(bytes)
    // Padded at the end, padded on every line, stray characters, a lone last character.
    for (const body of [
      'QUJD\r\nREU=',
      'QU-JD_RE',
      'QUI=\r\nQUI=\r\n',
      'QU*JD\r\nRE\xe9VG',
      'QUJDR',
      'QUJD=\r\n=\r\n',
      '',
      '====',
    ])
      expect(await decoded(body)).toEqual(expected(body))
  })

  test('any body of base64 characters, padding, line breaks and stray bytes', async () => {
    const char = fc.oneof(
      { weight: 20, arbitrary: fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/') },
      { weight: 2, arbitrary: fc.constant('=') },
      { weight: 2, arbitrary: fc.constant('\r\n') },
      { weight: 1, arbitrary: fc.constantFrom(' ', '\t', '*', '-', '_', '.', '\xe9', '\xff', '\x80') },
    )
    await fc.assert(
      fc.asyncProperty(fc.array(char, { maxLength: 400 }), async (chars) => {
        // A line that is only the boundary would end the part: not a body this test is about.
        const body = chars.join('').replace(/^--/gm, 'AA')
        expect(await decoded(body)).toEqual(expected(body))
      }),
      { numRuns: 400 },
    )
  })
})
