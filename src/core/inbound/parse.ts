/**
 * Turns raw RFC 5322 bytes into what we store, enforcing the spec's content limits
 * (attachments: count, each, total; text and html bodies). postal-mime does the MIME work;
 * it throws only past its nesting or header-size guards, which we refuse as unparseable.
 */
import type { Email } from 'postal-mime'
import type { Limits } from '../../config.ts'
import { deriveSender, deriveSubject } from './mime/fields.ts'
import { FaithfulPostalMime } from './mime/parser.ts'
import { makePreview } from './preview.ts'
import { sha256Hex } from '../common/stored-bytes.ts'
import { InboundRefusal } from './refusal.ts'
import { NestedMessageFound } from './structure.ts'

interface ParsedAttachment {
  filename: string
  contentType: string
  disposition: 'attachment' | 'inline'
  contentId: string | null
  content: Buffer
  /** Hex SHA-256 of `content`, stored with it and checked when served (core/common/stored-bytes.ts). */
  sha256: string
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
  /** Hex SHA-256 of the raw message; computed here so a large one is hashed off the event loop. */
  rawSha256: string
}

// A MIME type we can safely echo as Content-Type; anything else is served as octet-stream.
const SAFE_MIME_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/

const toBuffer = (content: ArrayBuffer | Uint8Array | string): Buffer =>
  typeof content === 'string'
    ? Buffer.from(content, 'utf8')
    : content instanceof Uint8Array
      ? Buffer.from(content.buffer, content.byteOffset, content.byteLength)
      : Buffer.from(content)

/** `onEventLoop`: stop with NestedMessageFound at a nested message instead of parsing it (see receive.ts). */
export async function parseMail(
  raw: Buffer,
  envelopeFrom: string,
  limits: Limits,
  options: { onEventLoop?: boolean } = {},
): Promise<ParsedMail> {
  let email: Email
  try {
    email = await new FaithfulPostalMime({
      maxHeadersSize: limits.headerBytes,
      limits,
      onEventLoop: options.onEventLoop,
    }).parse(raw)
  } catch (error) {
    if (error instanceof InboundRefusal || error instanceof NestedMessageFound) throw error
    throw new InboundRefusal('unparseable', error instanceof Error ? error.message.slice(0, 120) : '')
  }

  for (const [name, body] of [
    ['text', email.text],
    ['html', email.html],
  ] as const) {
    if (body && Buffer.byteLength(body, 'utf8') > limits.bodyBytes)
      throw new InboundRefusal('body_too_large', `${name} body over ${limits.bodyBytes} bytes`)
  }
  if (email.attachments.length > limits.attachments)
    throw new InboundRefusal('too_many_attachments', `at most ${limits.attachments}`)
  let total = 0
  const attachments = email.attachments.map((attachment, index): ParsedAttachment => {
    const content = toBuffer(attachment.content)
    if (content.byteLength > limits.attachmentBytes)
      throw new InboundRefusal('attachment_too_large', `each at most ${limits.attachmentBytes} bytes`)
    total += content.byteLength
    const mimeType = (attachment.mimeType ?? '').toLowerCase()
    return {
      filename: attachment.filename?.trim() || `attachment-${index + 1}`,
      contentType: SAFE_MIME_TYPE.test(mimeType) ? mimeType : 'application/octet-stream',
      disposition: attachment.disposition === 'inline' ? 'inline' : 'attachment',
      contentId: attachment.contentId ? attachment.contentId.replace(/^<|>$/g, '') : null,
      content,
      sha256: sha256Hex(content),
    }
  })
  if (total > limits.attachmentsTotalBytes)
    throw new InboundRefusal('attachments_too_large', `at most ${limits.attachmentsTotalBytes} bytes in all`)

  const from = deriveSender(raw, envelopeFrom)
  const text = email.text ?? null
  const html = email.html ?? null
  return {
    fromName: from.name,
    fromAddress: from.address,
    subject: deriveSubject(raw),
    preview: makePreview(text, html),
    internetMessageId: email.messageId ?? null,
    text,
    html,
    headers: email.headers.map((header) => [header.originalKey || header.key, header.value]),
    attachments,
    rawSha256: sha256Hex(raw),
  }
}
