/**
 * The three message shapes of the ingest benchmark, built once per run. Bodies are
 * ASCII with short lines (no dot-stuffing needed); each message gets its own headers.
 */

export type ShapeName = 'text_2kb' | 'html_30kb' | 'attachment_200kb'

export interface Shape {
  name: ShapeName
  label: string
  /** Everything after the headers, ending without the final CRLF.CRLF. */
  body: string
  /** Content-Type header line(s) for this shape. */
  contentType: string
  bytes: number
}

const WORDS =
  'inbox message pigeon receive verify token signup welcome reset password account confirm order invoice ship track'.split(
    ' ',
  )

/** Deterministic filler text: lines of words, about `bytes` long. */
function prose(bytes: number, seed = 1): string {
  const lines: string[] = []
  let size = 0
  let state = seed
  while (size < bytes) {
    const words: string[] = []
    for (let i = 0; i < 11; i++) {
      state = (state * 1103515245 + 12345) % 2147483648
      words.push(WORDS[state % WORDS.length]!)
    }
    const line = words.join(' ')
    lines.push(line)
    size += line.length + 2
  }
  return lines.join('\r\n')
}

function base64Lines(bytes: number): string {
  const data = new Uint8Array(bytes)
  let state = 7
  for (let i = 0; i < bytes; i++) {
    state = (state * 1103515245 + 12345) % 2147483648
    data[i] = state & 0xff
  }
  return Buffer.from(data).toString('base64').replace(/.{76}/g, '$&\r\n')
}

const HEADER_BYTES = 330 // the per-message headers written by headersFor(), roughly

function textShape(): Shape {
  const body = prose(2048 - HEADER_BYTES)
  return {
    name: 'text_2kb',
    label: '2 KB text',
    body,
    contentType: 'Content-Type: text/plain; charset=utf-8',
    bytes: 0,
  }
}

function htmlShape(): Shape {
  const boundary = 'bench-alt-boundary'
  const text = prose(10_000, 2)
  const html = `<html><body>${prose(19_500, 3)
    .split('\r\n')
    .map((line) => `<p>${line}</p>`)
    .join('\r\n')}</body></html>`
  const body = [
    `--${boundary}`,
    'Content-Type: text/plain; charset=utf-8',
    '',
    text,
    `--${boundary}`,
    'Content-Type: text/html; charset=utf-8',
    '',
    html,
    `--${boundary}--`,
  ].join('\r\n')
  return {
    name: 'html_30kb',
    label: '30 KB text+html',
    body,
    contentType: `Content-Type: multipart/alternative; boundary="${boundary}"`,
    bytes: 0,
  }
}

function attachmentShape(): Shape {
  const boundary = 'bench-mixed-boundary'
  const body = [
    `--${boundary}`,
    'Content-Type: text/plain; charset=utf-8',
    '',
    prose(1500, 4),
    `--${boundary}`,
    'Content-Type: application/pdf; name="report.pdf"',
    'Content-Disposition: attachment; filename="report.pdf"',
    'Content-Transfer-Encoding: base64',
    '',
    base64Lines(145_500),
    `--${boundary}--`,
  ].join('\r\n')
  return {
    name: 'attachment_200kb',
    label: '200 KB + base64 attachment',
    body,
    contentType: `Content-Type: multipart/mixed; boundary="${boundary}"`,
    bytes: 0,
  }
}

export function buildShapes(): Record<ShapeName, Shape> {
  const shapes = { text_2kb: textShape(), html_30kb: htmlShape(), attachment_200kb: attachmentShape() }
  for (const shape of Object.values(shapes))
    shape.bytes = headersFor(shape, 'x@bench.test', 0).length + shape.body.length
  return shapes
}

let sequence = 0

/** Fresh headers per message (own Message-ID and subject), ending with the blank line. */
export function headersFor(shape: Shape, to: string, n = ++sequence, subject = `Bench ${shape.name} ${n}`): string {
  return [
    'From: "Bench Sender" <sender@bench.example>',
    `To: <${to}>`,
    `Subject: ${subject}`,
    `Message-ID: <bench-${process.pid}-${n}-${Date.now()}@bench.example>`,
    'Date: Sun, 22 Nov 2026 02:00:00 +0000',
    'MIME-Version: 1.0',
    shape.contentType,
    '',
    '',
  ].join('\r\n')
}
