/**
 * The DATA phase of one SMTP transaction: parse, check content limits, store. Every path
 * releases the transaction's reservations, so a refused or failed message leaves the
 * quota exactly as it was.
 */
import type { Limits } from '../../config.ts'
import { errorFields } from '../../log.ts'
import type { Services } from '../services.ts'
import { parseMail, type ParsedMail } from './parse.ts'
import { InboundRefusal } from './refusal.ts'
import type { Reservation } from './reservations.ts'
import { storeInboundMessage, type StoredMessage } from './store.ts'

/**
 * The parser's time grows with the number of lines (ten million empty lines took seconds)
 * and its memory with the number of MIME parts (about 2 KiB each: 300,000 empty parts in
 * 1.5 MB took 700 MiB). Real mail stays far below both; one cheap scan checks them before
 * any parsing starts. A line starting with `--` is counted as a possible part delimiter.
 */
function scanStructure(raw: Buffer, limits: Limits): { refusal: InboundRefusal | null; delimiters: number } {
  let lines = 0
  let delimiters = 0
  for (let start = 0; ; ) {
    if (raw[start] === 0x2d && raw[start + 1] === 0x2d && ++delimiters > limits.messageParts) return { refusal: new InboundRefusal('too_many_parts', `at most ${limits.messageParts}`), delimiters }
    const end = raw.indexOf(0x0a, start)
    if (end === -1) return { refusal: null, delimiters }
    if (++lines > limits.messageLines) return { refusal: new InboundRefusal('too_many_lines', `at most ${limits.messageLines}`), delimiters }
    start = end + 1
  }
}

/**
 * A message this small without a line that could delimit a part has one MIME part, and
 * parsing it costs less CPU than the round trip to a worker (figures in bench/README.md);
 * the most hostile shapes of this size parse in a few milliseconds. So it is parsed on the
 * event loop; anything larger or multipart goes to the worker pool.
 */
export const PARSE_ON_EVENT_LOOP_MAX_BYTES = 8 * 1024

async function parse(s: Services, raw: Buffer, delimiters: number, envelopeFrom: string): Promise<{ mail: ParsedMail; raw: Buffer }> {
  if (delimiters > 0 || raw.byteLength > PARSE_ON_EVENT_LOOP_MAX_BYTES) return s.parser.parse(raw, envelopeFrom, s.config.limits)
  try {
    return { mail: await parseMail(raw, envelopeFrom, s.config.limits), raw }
  } catch (error) {
    // What a worker would answer for the same failure.
    if (error instanceof InboundRefusal) throw error
    throw new InboundRefusal('unparseable', error instanceof Error ? error.message.slice(0, 200) : 'parse failed')
  }
}

/** Takes over `raw`: its bytes may move to a parse worker and come back as the stored source. */
export async function receiveMessage(s: Services, raw: Buffer, envelopeFrom: string, recipients: Reservation[]): Promise<StoredMessage[]> {
  try {
    if (raw.byteLength > s.config.limits.messageBytes) throw new InboundRefusal('message_too_large', `at most ${s.config.limits.messageBytes} bytes`)
    const { refusal, delimiters } = scanStructure(raw, s.config.limits)
    if (refusal) throw refusal
    const { mail, raw: source } = await parse(s, raw, delimiters, envelopeFrom)
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
