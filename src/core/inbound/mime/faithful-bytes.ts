/**
 * downloadAttachment promises the bytes that were sent, but postal-mime rewrites two kinds:
 * text/calendar parts are re-decoded to UTF-8 with LF line ends (an .ics invite, a common
 * thing to test, would not download as sent), and parts not in base64 come out with every
 * line break as a bare LF plus one extra LF at the end. Here the part's decoded bytes are
 * taken as they are, and for line-based encodings the canonical CRLF line breaks of MIME
 * (RFC 2045 §2.10) are put back, and the LF that postal-mime adds after the last line is
 * dropped unless the sender wrote it (see lastBreakIsAdded).
 */

/** The few fields of postal-mime's (untyped, internal) MIME node that faithfulBytes reads. */
export interface PartNode {
  parentNode?: unknown
  contentTransferEncoding?: { encoding?: string }
}

const CR = Buffer.from([0x0d])

/**
 * Whether the LF that ends a part's decoded body (if any) is postal-mime's rather than the
 * sender's. postal-mime ends every line of a body that is not base64 with an LF, the last one
 * included. Inside a multipart that last line break is the CRLF before the next boundary,
 * which belongs to the boundary (RFC 2046 §5.1.1). A part that is the whole body of its
 * message ends where the message's bytes end, so its last line break is the sender's only
 * when `messageEndsWithSendersBreak`: a top-level message's is (SMTP ends DATA with CRLF),
 * while a forwarded message/rfc822 part inside a multipart ends with its parent's boundary
 * break. Without this rule an attachment of the 5 bytes `hello` that is the whole body of a
 * forwarded message downloaded as 7.
 */
export function lastBreakIsAdded(node: PartNode, messageEndsWithSendersBreak: boolean): boolean {
  if (node.contentTransferEncoding?.encoding === 'base64') return false
  return node.parentNode !== undefined || !messageEndsWithSendersBreak
}

/**
 * The part's bytes as sent: `decoded` with CRLF line breaks,
 * less the LF that lastBreakIsAdded says is not the sender's.
 */
export function faithfulBytes(node: PartNode, decoded: ArrayBuffer, addedBreak: boolean): Buffer {
  const bytes = Buffer.from(decoded)
  if (node.contentTransferEncoding?.encoding === 'base64') return bytes
  const body = addedBreak && bytes.at(-1) === 0x0a ? bytes.subarray(0, -1) : bytes
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
