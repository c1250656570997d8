/**
 * Message fields derived from the header block, as docs/message-fields.md describes: pure
 * functions of the raw bytes (first occurrence of a header wins, as in postal-mime) and the
 * envelope.
 */
import { decodeHeaderText } from './encoded-words.ts'
import { firstMailbox, isAddress } from './mailbox.ts'
import { topLevelHeader } from './raw-headers.ts'

/**
 * from: the first mailbox of the first From header. Its address must be an addr-spec; if it is
 * not (no From, a bare word, an empty group), the envelope sender stands in, and '' only when
 * that is empty too (a bounce, MAIL FROM:<>).
 */
export function deriveSender(raw: Buffer, envelopeFrom: string): { name: string; address: string } {
  const header = topLevelHeader(raw, 'from')
  const mailbox = header ? firstMailbox(header) : { name: '', address: '' }
  const name = decodeHeaderText(mailbox.name)
  if (isAddress(mailbox.address)) return { name, address: mailbox.address }
  return { name, address: isAddress(envelopeFrom) ? envelopeFrom : '' }
}

export function deriveSubject(raw: Buffer): string {
  return decodeHeaderText(topLevelHeader(raw, 'subject') ?? '')
}
