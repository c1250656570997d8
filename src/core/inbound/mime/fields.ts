/**
 * Message fields derived from the header block, as docs/message-fields.md describes: pure
 * functions of the parsed headers (first occurrence wins, as in postal-mime) and the envelope.
 */
import { decodeHeaderText } from './encoded-words.ts'
import { firstMailbox, isAddress } from './mailbox.ts'

export interface HeaderField {
  key: string
  value: string
}

const firstValue = (headers: HeaderField[], key: string): string | undefined => headers.find((header) => header.key === key)?.value

/**
 * from: the first mailbox of the first From header. Its address must be an addr-spec; if it is
 * not (no From, a bare word, an empty group), the envelope sender stands in, and '' only when
 * that is empty too (a bounce, MAIL FROM:<>).
 */
export function deriveSender(headers: HeaderField[], envelopeFrom: string): { name: string; address: string } {
  const header = firstValue(headers, 'from')
  const mailbox = header ? firstMailbox(header) : { name: '', address: '' }
  const name = decodeHeaderText(mailbox.name)
  if (isAddress(mailbox.address)) return { name, address: mailbox.address }
  return { name, address: isAddress(envelopeFrom) ? envelopeFrom : '' }
}

export function deriveSubject(headers: HeaderField[]): string {
  return decodeHeaderText(firstValue(headers, 'subject') ?? '')
}
