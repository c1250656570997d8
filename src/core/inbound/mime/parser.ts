/**
 * postal-mime with three of its internal methods hooked. They are not public API, so the
 * dependency is pinned to an exact version (package.json) and patched (patches/) so that a
 * nested message/rfc822 is parsed by this same subclass and gets the same hooks. Both are
 * checked when this module loads: a postal-mime that lacks them stops the server at start-up
 * instead of silently storing rewritten bytes (test/mime/mime.dependency.test.ts).
 */
import PostalMime, { type PostalMimeOptions } from 'postal-mime'
import { decodeHeaderText } from './encoded-words.ts'
import { faithfulBytes, type PartNode } from './faithful-bytes.ts'
import { correctPart, type PartTypeNode } from './part-type.ts'

interface MimeNode extends PartNode, PartTypeNode {
  contentDisposition: { parsed: { params: Record<string, string> } }
}

interface Internals {
  attachments: Array<{ filename: string | null; content: unknown }>
  collectNode(node: MimeNode, alternative: unknown, related: boolean): Promise<void>
  collectAttachment(node: MimeNode, content: ArrayBuffer, ...rest: unknown[]): void
  collectSubMessage(node: MimeNode): Promise<void>
}

const original = PostalMime.prototype as unknown as Partial<Internals>
const { collectNode, collectAttachment, collectSubMessage } = original
if (typeof collectNode !== 'function' || typeof collectAttachment !== 'function' || typeof collectSubMessage !== 'function') {
  throw new Error('postal-mime no longer has collectNode, collectAttachment and collectSubMessage: update src/core/inbound/mime/parser.ts with the pinned version')
}
if (!/new this\.constructor\(/.test(collectSubMessage.toString())) {
  throw new Error('postal-mime is not patched: nested messages would bypass src/core/inbound/mime/parser.ts (run bun install)')
}

export class FaithfulPostalMime extends PostalMime {
  // Nested parsers are built with the options of their parent (see the patch).
  constructor(options: PostalMimeOptions = {}) {
    super({ ...options, attachmentEncoding: 'arraybuffer' })
  }
}

const hooked = FaithfulPostalMime.prototype as unknown as Internals

hooked.collectNode = function (this: Internals, node, alternative, related) {
  correctPart(node)
  return collectNode.call(this, node, alternative, related)
}

hooked.collectAttachment = function (this: Internals, node, content, ...rest) {
  collectAttachment.call(this, node, content, ...rest)
  const attachment = this.attachments.at(-1)
  if (!attachment) return
  if (content instanceof ArrayBuffer) attachment.content = faithfulBytes(node, content)
  // postal-mime decodes the name's encoded words without UTF-7.
  const name = node.contentDisposition.parsed.params.filename || node.contentType.parsed.params.name
  if (name) attachment.filename = decodeHeaderText(name)
}
