/**
 * Corrections to a leaf MIME part before postal-mime sorts it into body text or attachment.
 * Both are facts of the bytes, so they are made on the part itself and hold for nested
 * messages too.
 */
import { decodeUtf7, isUtf7Charset } from './utf7.ts'

/** The fields of postal-mime's internal MIME node read or changed here. */
export interface LeafNode {
  contentType: { value: string; parsed: { value: string; params: Record<string, string> } }
  getTextContent(): string
}

// RFC 2045 §5.1: type "/" subtype, both tokens (no spaces, controls or tspecials).
const TOKEN = "[^\\x00-\\x20()<>@,;:\\\\\"/\\[\\]?=\\x7f-\\uffff]+"
const MEDIA_TYPE = new RegExp(`^${TOKEN}/${TOKEN}$`)

export function correctLeaf(node: LeafNode): void {
  const parsed = node.contentType.parsed
  // RFC 2045 §5.2: a Content-Type that is not a valid type/subtype is read as text/plain. Its
  // charset, if it names one, is still the best guess for the bytes.
  if (!MEDIA_TYPE.test(parsed.value)) parsed.value = 'text/plain'
  if (isUtf7Charset(parsed.params.charset)) {
    const read = node.getTextContent.bind(node)
    node.getTextContent = () => decodeUtf7(read())
  }
}
