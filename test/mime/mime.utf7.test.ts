/** UTF-7 (RFC 2152) in bodies and encoded words: the examples of the RFC and hostile runs. */
import { describe, expect, test } from 'bun:test'
import { decodeHeaderText } from '../../src/core/inbound/mime/encoded-words.ts'
import { decodeUtf7, isUtf7Charset } from '../../src/core/inbound/mime/utf7.ts'

describe('decodeUtf7', () => {
  test('the examples of RFC 2152', () => {
    expect(decodeUtf7('A+ImIDkQ.')).toBe('A\u2262\u0391.')
    expect(decodeUtf7('Hi Mom -+Jjo--!')).toBe('Hi Mom -\u263a-!')
    expect(decodeUtf7('+ZeVnLIqe-')).toBe('\u65e5\u672c\u8a9e')
    expect(decodeUtf7('Item 3 is +AKM-1.')).toBe('Item 3 is \u00a31.')
  })

  test('+- is a plus, a lone + stays, and text without + is returned as it is', () => {
    expect(decodeUtf7('1 +- 1 = 2')).toBe('1 + 1 = 2')
    expect(decodeUtf7('a + b')).toBe('a + b')
    const plain = 'no shifts here'
    expect(decodeUtf7(plain)).toBe(plain)
  })

  test('a surrogate pair decodes to one character; a lone surrogate becomes U+FFFD', () => {
    expect(decodeUtf7('+2D3eAA-')).toBe('\u{1f600}')
    expect(decodeUtf7('+2D0-x')).toBe('\ufffdx')
  })

  test('charset labels', () => {
    for (const label of ['utf-7', 'UTF-7', 'utf7', 'x-utf-7', 'unicode-1-1-utf-7', 'csUnicode11UTF7'])
      expect(isUtf7Charset(label)).toBe(true)
    for (const label of [undefined, '', 'utf-8', 'utf-16', 'x-utf-77']) expect(isUtf7Charset(label)).toBe(false)
  })
})

describe('decodeHeaderText', () => {
  test('UTF-7 encoded words in Q and B encoding, beside other charsets', () => {
    expect(decodeHeaderText('=?utf-7?Q?Fr+APY-sche?=')).toBe('Frösche')
    expect(decodeHeaderText(`=?UTF-7?B?${Buffer.from('Fr+APY-sche').toString('base64')}?=`)).toBe('Frösche')
    expect(decodeHeaderText('=?utf-7?Q?Fr+APY-sche?= =?iso-8859-1?Q?und_Gr=FC=DFe?=')).toBe('Fröscheund Grüße')
    expect(decodeHeaderText('=?utf-7*de?Q?Fr+APY-sche?= bleiben')).toBe('Frösche bleiben')
  })

  test('text without encoded words is unchanged', () => {
    expect(decodeHeaderText('Fr+APY-sche')).toBe('Fr+APY-sche')
  })
})
