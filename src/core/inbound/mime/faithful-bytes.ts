/**
 * downloadAttachment promises the bytes that were sent, but postal-mime rewrites two kinds:
 * text/calendar parts are re-decoded to UTF-8 with LF line ends (an .ics invite, a common
 * thing to test, would not download as sent), and parts not in base64 come out with every
 * line break as a bare LF plus one extra LF at the end. Here the part's decoded bytes are
 * taken as they are, and for line-based encodings the canonical CRLF line breaks of MIME
 * (RFC 2045 §2.10) are put back; the last LF of a part inside a multipart is the CRLF that
 * belongs to the boundary (RFC 2046 §5.1.1), so it is dropped.
 */

/** The few fields of postal-mime's (untyped, internal) MIME node that faithfulBytes reads. */
export interface PartNode {
  parentNode?: unknown
  contentTransferEncoding?: { encoding?: string }
}

const CR = Buffer.from([0x0d])

export function faithfulBytes(node: PartNode, decoded: ArrayBuffer): Buffer {
  const bytes = Buffer.from(decoded)
  if (node.contentTransferEncoding?.encoding === 'base64') return bytes
  const body = node.parentNode && bytes.at(-1) === 0x0a ? bytes.subarray(0, -1) : bytes
  // Copies runs between bare LFs rather than byte by byte: parts go up to 5 MiB.
  const runs: Buffer[] = []
  let start = 0
  for (let at = body.indexOf(0x0a); at !== -1; at = body.indexOf(0x0a, at + 1)) {
    if (at > 0 && body[at - 1] === 0x0d) continue
    runs.push(body.subarray(start, at), CR)
    start = at
  }
  runs.push(body.subarray(start))
  return Buffer.concat(runs)
}
