/**
 * Corrections to a MIME part before postal-mime sorts it into body text or attachment. They
 * are facts of the bytes, so they are made on the part itself and hold for nested messages
 * too: the media type, UTF-7, and format=flowed unwrapping (./flowed.ts).
 */
import { decodeFlowed } from './flowed.ts'
import { decodeUtf7, isUtf7Charset } from './utf7.ts'

/** The fields of postal-mime's internal MIME node read or changed here. */
export interface PartTypeNode {
  contentType: { value: string; parsed: { value: string; params: Record<string, string> }; multipart: string | false }
  getTextContent(): string
  /** Called by getTextContent for format=flowed, on the text decoded from its charset. */
  decodeFlowedText(text: string, delSp: boolean): string
}

// RFC 2045 §5.1: type "/" subtype, both tokens (no spaces, controls or tspecials).
const TOKEN = '[^\\x00-\\x20()<>@,;:\\\\"/\\[\\]?=\\x7f-\\uffff]+'
const MEDIA_TYPE = new RegExp(`^${TOKEN}/${TOKEN}$`)

export function correctPart(node: PartTypeNode): void {
  const type = node.contentType
  // RFC 2045 §5.2: a Content-Type that is not a valid type/subtype is read as text/plain. Its
  // charset, if it names one, is still the best guess for the bytes. A multipart without the
  // boundary it requires (RFC 2046 §5.1.1) cannot be split, and its body would be lost.
  if (!MEDIA_TYPE.test(type.parsed.value) || (type.multipart !== false && !type.parsed.params.boundary)) {
    type.parsed.value = 'text/plain'
    type.multipart = false
  }
  if (type.multipart !== false) return
  // UTF-7 is decoded before unwrapping, since it may encode the quote marks and spaces.
  // RFC 3676 defines format=flowed for text/plain only; other types keep their lines.
  const utf7 = isUtf7Charset(type.parsed.params.charset)
  const plain = type.parsed.value === 'text/plain'
  node.decodeFlowedText = (text, delSp) => {
    const decoded = utf7 ? decodeUtf7(text) : text
    return plain ? decodeFlowed(decoded, delSp) : decoded
  }
  if (utf7 && !/^flowed$/i.test(type.parsed.params.format ?? '')) {
    const read = node.getTextContent.bind(node)
    node.getTextContent = () => decodeUtf7(read())
  }
}
