/**
 * Corrections to a MIME part before postal-mime sorts it into body text or attachment. Both
 * are facts of the bytes, so they are made on the part itself and hold for nested messages too.
 */
import { decodeUtf7, isUtf7Charset } from './utf7.ts'

/** The fields of postal-mime's internal MIME node read or changed here. */
export interface PartTypeNode {
  contentType: { value: string; parsed: { value: string; params: Record<string, string> }; multipart: string | false }
  getTextContent(): string
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
  if (type.multipart === false && isUtf7Charset(type.parsed.params.charset)) {
    const read = node.getTextContent.bind(node)
    node.getTextContent = () => decodeUtf7(read())
  }
}
