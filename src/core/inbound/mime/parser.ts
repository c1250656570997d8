/**
 * postal-mime with three of its internal methods hooked. They are not public API, so the
 * dependency is pinned to an exact version (package.json) and patched (patches/) so that a
 * nested message/rfc822 is parsed by this same subclass and gets the same hooks. Both are
 * checked when this module loads: a postal-mime that lacks them stops the server at start-up
 * instead of silently storing rewritten bytes (test/mime/mime.dependency.test.ts).
 */
import PostalMime, { type PostalMimeOptions } from 'postal-mime'
import type { Limits } from '../../../config.ts'
import { InboundRefusal } from '../refusal.ts'
import { NestedMessageFound, scanStructure } from '../structure.ts'
import { decodeHeaderText } from './encoded-words.ts'
import { faithfulBytes, lastBreakIsAdded, type PartNode } from './faithful-bytes.ts'
import { correctPart, type PartTypeNode } from './part-type.ts'

interface MimeNode extends PartNode, PartTypeNode {
  contentDisposition: { parsed: { params: Record<string, string> } }
}

interface Internals {
  nestedMessages: NestedMessageBudget
  /** The bytes this parser was given: the whole message, or a nested message's body. */
  av: Uint8Array
  lastBreakBelongsToBoundary: boolean
  attachments: Array<{ filename: string | null; content: unknown }>
  collectNode(node: MimeNode, alternative: unknown, related: boolean): Promise<void>
  collectAttachment(node: MimeNode, content: ArrayBuffer, ...rest: unknown[]): void
  collectSubMessage(node: MimeNode & { content?: ArrayBuffer }): Promise<void>
}

const original = PostalMime.prototype as unknown as Partial<Internals>
const { collectNode, collectAttachment, collectSubMessage } = original
if (
  typeof collectNode !== 'function' ||
  typeof collectAttachment !== 'function' ||
  typeof collectSubMessage !== 'function'
) {
  throw new Error(
    'postal-mime no longer has collectNode, collectAttachment and collectSubMessage: ' +
      'update src/core/inbound/mime/parser.ts with the pinned version',
  )
}
if (!/new this\.constructor\(/.test(collectSubMessage.toString())) {
  throw new Error(
    'postal-mime is not patched: nested messages would bypass src/core/inbound/mime/parser.ts (run bun install)',
  )
}

/**
 * A message/rfc822 part's body may be base64 or quoted-printable, so the message inside,
 * with all its parts and lines, shows only once decoded and the scan of the raw bytes
 * (src/core/inbound/structure.ts) never sees it: a small base64 body can hold enough empty
 * parts to cost a worker far more memory than its size (figure in bench/README.md). So each
 * nested message's decoded bytes are scanned before it is parsed, against one budget for
 * all the nested messages of a message, as large as the limits themselves.
 */
class NestedMessageBudget {
  private lines = 0
  private delimiters = 0

  constructor(
    private readonly limits: Pick<Limits, 'messageLines' | 'messageParts'>,
    private readonly onEventLoop: boolean,
  ) {}

  admit(content: ArrayBuffer | undefined): void {
    if (this.onEventLoop) throw new NestedMessageFound()
    const { messageLines, messageParts } = this.limits
    const found = scanStructure(new Uint8Array(content ?? new ArrayBuffer(0)), {
      messageLines: messageLines - this.lines,
      messageParts: messageParts - this.delimiters,
    })
    if (found.refusal?.reason === 'too_many_parts')
      throw new InboundRefusal('too_many_parts', `at most ${messageParts}`)
    if (found.refusal) throw new InboundRefusal('too_many_lines', `at most ${messageLines}`)
    this.lines += found.lines
    this.delimiters += found.delimiters
  }
}

export interface FaithfulOptions extends PostalMimeOptions {
  /** The structural limits nested messages are held to. */
  limits?: Pick<Limits, 'messageLines' | 'messageParts'>
  /** Parsing on the event loop, where a nested message is not parsed at all (NestedMessageFound). */
  onEventLoop?: boolean
}

const UNLIMITED = { messageLines: Number.POSITIVE_INFINITY, messageParts: Number.POSITIVE_INFINITY }

/** Handed from a parser to the nested parser it constructs, synchronously (see collectSubMessage below). */
let handedDown: { budget: NestedMessageBudget; lastBreakBelongsToBoundary: boolean } | undefined

export class FaithfulPostalMime extends PostalMime {
  readonly nestedMessages: NestedMessageBudget
  /**
   * Whether the last line break of this parser's input belongs to a boundary of the message
   * around it: true for a forwarded message taken from a multipart, whose part body postal-
   * mime hands over with the CRLF before the next boundary (see lastBreakIsAdded).
   */
  readonly lastBreakBelongsToBoundary: boolean

  // Nested parsers are built with the options of their parent (see the patch).
  constructor({ limits, onEventLoop, ...options }: FaithfulOptions = {}) {
    super({ ...options, attachmentEncoding: 'arraybuffer' })
    this.nestedMessages = handedDown?.budget ?? new NestedMessageBudget(limits ?? UNLIMITED, onEventLoop ?? false)
    this.lastBreakBelongsToBoundary = handedDown?.lastBreakBelongsToBoundary ?? false
    handedDown = undefined
  }
}

const hooked = FaithfulPostalMime.prototype as unknown as Internals

/** Whether the parser's input ends with a line break of its sender's (not a boundary's). */
function endsWithSendersBreak(parser: Internals): boolean {
  // postal-mime keeps its input in an internal field: read loudly, never guessed.
  if (!(parser.av instanceof Uint8Array))
    throw new Error(
      'postal-mime no longer keeps its input in av: update src/core/inbound/mime/parser.ts with the pinned version',
    )
  return !parser.lastBreakBelongsToBoundary && parser.av.at(-1) === 0x0a
}

hooked.collectNode = function (this: Internals, node, alternative, related) {
  correctPart(node)
  return collectNode.call(this, node, alternative, related)
}

hooked.collectAttachment = function (this: Internals, node, content, ...rest) {
  collectAttachment.call(this, node, content, ...rest)
  const attachment = this.attachments.at(-1)
  if (!attachment) return
  if (content instanceof ArrayBuffer)
    attachment.content = faithfulBytes(node, content, lastBreakIsAdded(node, endsWithSendersBreak(this)))
  // postal-mime decodes the name's encoded words without UTF-7.
  const name = node.contentDisposition.parsed.params.filename || node.contentType.parsed.params.name
  if (name) attachment.filename = decodeHeaderText(name)
}

hooked.collectSubMessage = function (this: Internals, node) {
  this.nestedMessages.admit(node.content)
  // The patched original constructs the nested parser before its first await. It is told
  // whether the last line break of its input is the boundary's, so that the nested message's
  // own last part ends where its sender ended it (the part body is not cut, to save a copy).
  handedDown = {
    budget: this.nestedMessages,
    lastBreakBelongsToBoundary: lastBreakIsAdded(node, endsWithSendersBreak(this)),
  }
  try {
    return collectSubMessage.call(this, node)
  } finally {
    handedDown = undefined
  }
}
