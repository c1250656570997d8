/**
 * The DATA phase of one SMTP transaction: parse, check content limits, store. Every path
 * releases the transaction's reservations, so a refused or failed message leaves the
 * quota exactly as it was.
 */
import type { Limits } from '../../config.ts'
import { errorFields } from '../../log.ts'
import type { Services } from '../services.ts'
import { InboundRefusal } from './refusal.ts'
import type { Reservation } from './reservations.ts'
import { storeInboundMessage, type StoredMessage } from './store.ts'

/**
 * The parser's time grows with the number of lines (ten million empty lines took seconds)
 * and its memory with the number of MIME parts (about 2 KiB each: 300,000 empty parts in
 * 1.5 MB took 700 MiB). Real mail stays far below both; one cheap scan checks them before
 * any parsing starts. A line starting with `--` is counted as a possible part delimiter.
 */
function structureRefusal(raw: Buffer, limits: Limits): InboundRefusal | null {
  let lines = 0
  let delimiters = 0
  for (let start = 0; ; ) {
    if (raw[start] === 0x2d && raw[start + 1] === 0x2d && ++delimiters > limits.messageParts) return new InboundRefusal('too_many_parts', `at most ${limits.messageParts}`)
    const end = raw.indexOf(0x0a, start)
    if (end === -1) return null
    if (++lines > limits.messageLines) return new InboundRefusal('too_many_lines', `at most ${limits.messageLines}`)
    start = end + 1
  }
}

/** Takes over `raw`: its bytes move to a parse worker and come back as the stored source. */
export async function receiveMessage(s: Services, raw: Buffer, envelopeFrom: string, recipients: Reservation[]): Promise<StoredMessage[]> {
  try {
    if (raw.byteLength > s.config.limits.messageBytes) throw new InboundRefusal('message_too_large', `at most ${s.config.limits.messageBytes} bytes`)
    const refusal = structureRefusal(raw, s.config.limits)
    if (refusal) throw refusal
    const { mail, raw: source } = await s.parser.parse(raw, envelopeFrom, s.config.limits)
    let stored: StoredMessage[]
    try {
      stored = await storeInboundMessage(s, source, mail, recipients)
    } catch (error) {
      if (error instanceof InboundRefusal) throw error // a limit of the new period, not a failure
      s.logger.error('message_store_failed', { size_bytes: source.byteLength, ...errorFields(error) })
      throw new InboundRefusal('storage_failed')
    }
    if (stored.length === 0) throw new InboundRefusal('unknown_recipient')
    return stored
  } finally {
    for (const reservation of recipients) s.reservations.release(reservation)
  }
}
