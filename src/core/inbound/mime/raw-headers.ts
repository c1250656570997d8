/**
 * Top-level header values read from the raw bytes rather than from postal-mime, which decodes
 * every header line as UTF-8 before anything else: an 8-bit byte that is not UTF-8 (common in
 * old mail: `=?iso-8859-1?Q?Fr<0xF6>sche?=`, or a raw Latin-1 display name) is then already
 * U+FFFD and the sender's character is lost. Here an encoded word keeps its bytes, so its own
 * charset decodes them, and other 8-bit text is UTF-8 (RFC 6532) or, when it is not valid
 * UTF-8, windows-1252.
 */

// Headers past this are refused by the parser anyway (postal-mime's 2 MiB header limit).
const MAX_HEADER_BYTES = 2 * 1024 * 1024 + 2
const ENCODED_WORD = /=\?([^?\s]+)\?([QqBb])\?([^?]*)\?=/g
const utf8 = new TextDecoder('utf-8', { fatal: true })
const windows1252 = new TextDecoder('windows-1252')

/** The top-level header block (up to the first empty line), one char per byte. */
function headerBlock(raw: Buffer): string {
  if (raw[0] === 0x0a || (raw[0] === 0x0d && raw[1] === 0x0a)) return ''
  const head = raw.subarray(0, MAX_HEADER_BYTES)
  const ends = [head.indexOf('\n\n'), head.indexOf('\n\r\n')].filter((at) => at >= 0)
  return head.subarray(0, ends.length ? Math.min(...ends) : head.length).toString('latin1')
}

function textOf(bytes: string): string {
  if (!/[\x80-\xff]/.test(bytes)) return bytes
  const buffer = Buffer.from(bytes, 'latin1')
  try {
    return utf8.decode(buffer)
  } catch {
    return windows1252.decode(buffer)
  }
}

/** Encoded words stay ASCII (one with raw 8-bit bytes is re-encoded as base64); the rest becomes text. */
function toUnicode(value: string): string {
  let out = ''
  let at = 0
  for (const match of value.matchAll(ENCODED_WORD)) {
    const [word, charset, encoding, text] = match as unknown as [string, string, string, string]
    out += textOf(value.slice(at, match.index))
    const eightBit = encoding.toUpperCase() === 'Q' && /[\x80-\xff]/.test(text)
    const bytes = eightBit
      ? Buffer.from(
          text
            .replace(/_/g, ' ')
            .replace(/=([0-9A-Fa-f]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16))),
          'latin1',
        )
      : null
    out += bytes ? `=?${charset}?B?${bytes.toString('base64')}?=` : word
    at = match.index + word.length
  }
  return out + textOf(value.slice(at))
}

/** The first top-level header of that name, unfolded (folding whitespace kept), or undefined. */
export function topLevelHeader(raw: Buffer, name: string): string | undefined {
  const lines = headerBlock(raw).split('\n')
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!
    const colon = line.indexOf(':')
    if (colon < 0 || /^[ \t]/.test(line) || line.slice(0, colon).trim().toLowerCase() !== name) continue
    let value = line.slice(colon + 1).replace(/\r$/, '')
    while (i + 1 < lines.length && /^[ \t]/.test(lines[i + 1]!)) value += lines[++i]!.replace(/\r$/, '')
    return toUnicode(value.replace(/\r/g, ' ').replace(/^[ \t]+|[ \t]+$/g, ''))
  }
  return undefined
}
