/**
 * Turns raw RFC 5322 bytes into what we store, enforcing the spec's content limits
 * (attachments: count, each, total; text and html bodies). postal-mime does the MIME work;
 * it throws only past its nesting or header-size guards, which we refuse as unparseable.
 */
import PostalMime, { type Address, type Email } from 'postal-mime'
import type { Limits } from '../../config.ts'
import { makePreview } from './preview.ts'
import { InboundRefusal } from './refusal.ts'

interface ParsedAttachment {
  filename: string
  contentType: string
  disposition: 'attachment' | 'inline'
  contentId: string | null
  content: Buffer
}

export interface ParsedMail {
  fromName: string
  fromAddress: string
  subject: string
  preview: string
  internetMessageId: string | null
  text: string | null
  html: string | null
  headers: Array<[string, string]>
  attachments: ParsedAttachment[]
}

// A MIME type we can safely echo as Content-Type; anything else is served as octet-stream.
const SAFE_MIME_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/

function firstMailbox(address: Address | undefined): { name: string; address: string } | null {
  if (!address) return null
  if (address.group) return address.group[0] ? { name: address.group[0].name ?? '', address: address.group[0].address ?? '' } : null
  return { name: address.name ?? '', address: address.address ?? '' }
}

/** The few fields of postal-mime's (untyped, internal) MIME node that faithfulBytes reads. */
interface PartNode {
  parentNode?: unknown
  contentTransferEncoding?: { encoding?: string }
}

/**
 * downloadAttachment promises the bytes that were sent, but postal-mime rewrites two kinds:
 * text/calendar parts are re-decoded to UTF-8 with LF line ends (an .ics invite, a common
 * thing to test, would not download as sent), and parts not in base64 come out with every
 * line break as a bare LF plus one extra LF at the end. Here the part's decoded bytes are
 * taken as they are, and for line-based encodings the canonical CRLF line breaks of MIME
 * (RFC 2045 §2.10) are put back; the last LF of a part inside a multipart is the CRLF that
 * belongs to the boundary (RFC 2046 §5.1.1), so it is dropped.
 */
function faithfulBytes(node: PartNode, decoded: ArrayBuffer): Buffer {
  const bytes = Buffer.from(decoded)
  if (node.contentTransferEncoding?.encoding === 'base64') return bytes
  const body = node.parentNode && bytes.at(-1) === 0x0a ? bytes.subarray(0, -1) : bytes
  const out: number[] = []
  for (let i = 0; i < body.length; i++) {
    if (body[i] === 0x0a && body[i - 1] !== 0x0d) out.push(0x0d)
    out.push(body[i]!)
  }
  return Buffer.from(out)
}

/**
 * postal-mime with its attachment collection hooked (an internal method of 4.x, so this is
 * checked at run time: without the hook the parser's own bytes are kept, and the byte-exact
 * download tests fail). Attachments of nested message/rfc822 parts come from a parser
 * postal-mime makes itself, so they keep its rewriting.
 */
class FaithfulPostalMime extends PostalMime {
  constructor() {
    super({ attachmentEncoding: 'arraybuffer' })
  }
}
type Collector = (node: PartNode, content: ArrayBuffer, ...rest: unknown[]) => void
const collect = (PostalMime.prototype as unknown as { collectAttachment?: Collector }).collectAttachment
if (typeof collect === 'function') {
  ;(FaithfulPostalMime.prototype as unknown as { collectAttachment: Collector }).collectAttachment = function (this: { attachments: Array<{ content: unknown }> }, node, content, ...rest) {
    collect.call(this, node, content, ...rest)
    const attachment = this.attachments.at(-1)
    if (attachment && content instanceof ArrayBuffer) attachment.content = faithfulBytes(node, content)
  }
}

const toBuffer = (content: ArrayBuffer | Uint8Array | string): Buffer =>
  typeof content === 'string' ? Buffer.from(content, 'utf8') : content instanceof Uint8Array ? Buffer.from(content.buffer, content.byteOffset, content.byteLength) : Buffer.from(content)

export async function parseMail(raw: Buffer, envelopeFrom: string, limits: Limits): Promise<ParsedMail> {
  let email: Email
  try {
    email = await new FaithfulPostalMime().parse(raw)
  } catch (error) {
    throw new InboundRefusal('unparseable', error instanceof Error ? error.message.slice(0, 120) : '')
  }

  for (const [name, body] of [
    ['text', email.text],
    ['html', email.html],
  ] as const) {
    if (body && Buffer.byteLength(body, 'utf8') > limits.bodyBytes) throw new InboundRefusal('body_too_large', `${name} body over ${limits.bodyBytes} bytes`)
  }
  if (email.attachments.length > limits.attachments) throw new InboundRefusal('too_many_attachments', `at most ${limits.attachments}`)
  let total = 0
  const attachments = email.attachments.map((attachment, index): ParsedAttachment => {
    const content = toBuffer(attachment.content)
    if (content.byteLength > limits.attachmentBytes) throw new InboundRefusal('attachment_too_large', `each at most ${limits.attachmentBytes} bytes`)
    total += content.byteLength
    const mimeType = (attachment.mimeType ?? '').toLowerCase()
    return {
      filename: attachment.filename?.trim() || `attachment-${index + 1}`,
      contentType: SAFE_MIME_TYPE.test(mimeType) ? mimeType : 'application/octet-stream',
      disposition: attachment.disposition === 'inline' ? 'inline' : 'attachment',
      contentId: attachment.contentId ? attachment.contentId.replace(/^<|>$/g, '') : null,
      content,
    }
  })
  if (total > limits.attachmentsTotalBytes) throw new InboundRefusal('attachments_too_large', `at most ${limits.attachmentsTotalBytes} bytes in all`)

  const from = firstMailbox(email.from) ?? { name: '', address: envelopeFrom }
  const text = email.text ?? null
  const html = email.html ?? null
  return {
    fromName: from.name,
    fromAddress: from.address || envelopeFrom,
    subject: email.subject ?? '',
    preview: makePreview(text, html),
    internetMessageId: email.messageId ?? null,
    text,
    html,
    headers: email.headers.map((header) => [header.originalKey || header.key, header.value]),
    attachments,
  }
}
