/**
 * An independent reading of a MIME message for tests: splits parts at boundary lines and
 * undoes base64 and quoted-printable with its own code (Node's Buffer for base64), never
 * with postal-mime. Corpus tests compare what the server stored against it.
 */

export interface Part {
  /** Lowercased type/subtype as the part declares it ('' if absent or invalid). */
  type: string
  disposition: string
  /** The decoded body bytes (transfer encoding undone). */
  bytes: Buffer
  /** Set for parts sitting inside an inline message/rfc822 part. */
  nested: boolean
}

const CRLF = Buffer.from('\r\n')

function splitHead(raw: Buffer): { head: string; body: Buffer | null } {
  if (raw.subarray(0, 2).equals(CRLF)) return { head: '', body: raw.subarray(2) }
  const at = raw.indexOf('\r\n\r\n')
  if (at < 0) return { head: raw.toString('latin1'), body: null }
  return { head: raw.subarray(0, at).toString('latin1'), body: raw.subarray(at + 4) }
}

function headerValue(head: string, name: string): string {
  const unfolded = head.replace(/\r\n(?=[ \t])/g, '')
  const line = unfolded.split('\r\n').find((l) => l.slice(0, l.indexOf(':')).trim().toLowerCase() === name)
  return line ? line.slice(line.indexOf(':') + 1).trim() : ''
}

function param(value: string, name: string): string | null {
  const match = new RegExp(`(?:^|;)\\s*${name}\\s*=\\s*(?:"((?:[^"\\\\]|\\\\.)*)"|([^;\\s]+))`, 'i').exec(value)
  return match ? (match[1] ?? match[2] ?? '').replace(/\\(.)/g, '$1') : null
}

function decodeQuotedPrintable(body: Buffer): Buffer {
  const out: Buffer[] = []
  const lines = body.toString('latin1').split('\r\n')
  lines.forEach((rawLine, index) => {
    let line = rawLine.replace(/[ \t]+$/, '')
    const soft = line.endsWith('=')
    if (soft) line = line.slice(0, -1)
    out.push(
      Buffer.from(
        line.replace(/=([0-9A-Fa-f]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16))),
        'latin1',
      ),
    )
    if (!soft && index < lines.length - 1) out.push(CRLF)
  })
  return Buffer.concat(out)
}

function decode(body: Buffer, encoding: string): Buffer {
  if (encoding === 'base64') return Buffer.from(body.toString('latin1').replace(/[^A-Za-z0-9+/]/g, ''), 'base64')
  if (encoding === 'quoted-printable') return decodeQuotedPrintable(body)
  return body
}

/** Body parts between boundary lines; the CRLF before a boundary line belongs to it (RFC 2046 §5.1.1). */
function splitMultipart(body: Buffer, boundary: string): Buffer[] {
  const parts: Buffer[] = []
  const text = body.toString('latin1')
  const delimiter = new RegExp(
    `(^|\\r\\n)--${boundary.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(--)?[ \\t]*(?=\\r\\n|$)`,
    'g',
  )
  let start = -1
  for (let match = delimiter.exec(text); match; match = delimiter.exec(text)) {
    if (start >= 0) parts.push(body.subarray(start, match.index))
    if (match[2]) return parts
    start = match.index + match[0].length + 2
  }
  if (start >= 0 && start <= body.length)
    parts.push(
      body.subarray(start).subarray(0, body.subarray(start).toString('latin1').endsWith('\r\n') ? -2 : undefined),
    )
  return parts
}

// RFC 2045 token characters: printable ASCII without tspecials.
const MEDIA_TYPE = /^[!#$%&'*+.^_`{|}~0-9A-Za-z-]+\/[!#$%&'*+.^_`{|}~0-9A-Za-z-]+$/

/** Every leaf part of a message, depth first, descending into message/rfc822 parts as well. */
export function mimeParts(raw: Buffer, nested = false, defaultType = 'text/plain', depth = 0): Part[] {
  const { head, body } = splitHead(raw)
  const contentType = headerValue(head, 'content-type')
  const declared = contentType.split(';')[0]!.trim().toLowerCase()
  const type = contentType ? (MEDIA_TYPE.test(declared) ? declared : 'text/plain') : defaultType
  const disposition = headerValue(head, 'content-disposition').split(';')[0]!.trim().toLowerCase()
  const encoding = (/[\w-]+/.exec(headerValue(head, 'content-transfer-encoding').toLowerCase()) ?? [''])[0]!
  if (body === null || depth > 50) return []
  const boundary = param(contentType, 'boundary')
  if (type.startsWith('multipart/') && boundary) {
    const childType = type === 'multipart/digest' ? 'message/rfc822' : 'text/plain'
    return splitMultipart(body, boundary).flatMap((part) => mimeParts(part, nested, childType, depth + 1))
  }
  const bytes = decode(body, encoding)
  const self: Part = { type, disposition, bytes, nested }
  if (type === 'message/rfc822') return [self, ...mimeParts(bytes, true, 'text/plain', depth + 1)]
  return [self]
}

const WORD = /=\?([^?\s]+)\?([QqBb])\?([^?]*)\?=/g

/** Raw header bytes (one char per byte) outside encoded words: UTF-8, else windows-1252. */
function rawText(bytes: string): string {
  const buffer = Buffer.from(bytes, 'latin1')
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(buffer)
  } catch {
    return new TextDecoder('windows-1252').decode(buffer)
  }
}

type Piece = { text: string } | { charset: string; words: Buffer[] }

function decodeWords(charset: string, words: Buffer[]): string {
  const decoder = new TextDecoder(charset as ConstructorParameters<typeof TextDecoder>[0])
  const apart = words.map((bytes) => decoder.decode(bytes)).join('')
  const together = decoder.decode(Buffer.concat(words))
  return apart.includes('\ufffd') && !together.includes('\ufffd') ? together : apart
}

/**
 * RFC 2047 decoding of an unstructured header given as raw bytes (one char per byte),
 * independently of the server: each encoded word decoded on its own (RFC 2047 §5), or a run
 * of one charset together when only that decodes (a character split across words); the
 * whitespace between encoded words is dropped. null when a charset is one TextDecoder lacks.
 */
export function decodeUnstructured(value: string): string | null {
  const pieces: Piece[] = []
  let at = 0
  for (const match of value.matchAll(WORD)) {
    const between = value.slice(at, match.index)
    const previous = pieces.at(-1)
    const [, label, encoding, text] = match as unknown as [string, string, string, string]
    const charset = label.split('*')[0]!.toLowerCase()
    const bytes =
      encoding.toUpperCase() === 'B'
        ? Buffer.from(text.replace(/[^A-Za-z0-9+/]/g, ''), 'base64')
        : Buffer.from(
            text
              .replace(/_/g, ' ')
              .replace(/=([0-9A-Fa-f]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16))),
            'latin1',
          )
    const adjacent = previous && 'charset' in previous && /^[ \t]*$/.test(between)
    if (!adjacent) pieces.push({ text: rawText(between) })
    if (adjacent && previous.charset === charset) previous.words.push(bytes)
    else pieces.push({ charset, words: [bytes] })
    at = match.index + match[0].length
  }
  pieces.push({ text: rawText(value.slice(at)) })
  try {
    return pieces.map((piece) => ('text' in piece ? piece.text : decodeWords(piece.charset, piece.words))).join('')
  } catch {
    return null
  }
}
