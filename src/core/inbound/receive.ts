/**
 * The DATA phase of one SMTP transaction: parse, check content limits, store. Every path
 * releases the transaction's reservations, so a refused or failed message leaves the
 * quota exactly as it was.
 */
import { errorFields } from '../../log.ts'
import type { Services } from '../services.ts'
import { InboundRefusal } from './refusal.ts'
import type { Reservation } from './reservations.ts'
import { storeInboundMessage, type StoredMessage } from './store.ts'

function hasMoreLinesThan(raw: Buffer, max: number): boolean {
  let lines = 0
  for (let at = raw.indexOf(0x0a); at !== -1; at = raw.indexOf(0x0a, at + 1)) {
    if (++lines > max) return true
  }
  return false
}

/** Takes over `raw`: its bytes move to a parse worker and come back as the stored source. */
export async function receiveMessage(s: Services, raw: Buffer, envelopeFrom: string, recipients: Reservation[]): Promise<StoredMessage[]> {
  try {
    if (raw.byteLength > s.config.limits.messageBytes) throw new InboundRefusal('message_too_large', `at most ${s.config.limits.messageBytes} bytes`)
    // The parser's cost grows with the number of lines: ten million empty lines took seconds.
    // Real mail stays far below; counting is a cheap scan, so it happens before the worker.
    if (hasMoreLinesThan(raw, s.config.limits.messageLines)) throw new InboundRefusal('too_many_lines', `at most ${s.config.limits.messageLines}`)
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
