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
  const delimiter = new RegExp(`(^|\\r\\n)--${boundary.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(--)?[ \\t]*(?=\\r\\n|$)`, 'g')
  let start = -1
  for (let match = delimiter.exec(text); match; match = delimiter.exec(text)) {
    if (start >= 0) parts.push(body.subarray(start, match.index))
    if (match[2]) return parts
    start = match.index + match[0].length + 2
  }
  if (start >= 0 && start <= body.length) parts.push(body.subarray(start).subarray(0, body.subarray(start).toString('latin1').endsWith('\r\n') ? -2 : undefined))
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
