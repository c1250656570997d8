/**
 * The DATA phase of one SMTP transaction: parse, check content limits, store. Every path
 * releases the transaction's reservations, so a refused or failed message leaves the
 * quota exactly as it was.
 */
import { errorFields } from '../../log.ts'
import type { Services } from '../common/services.ts'
import type { ParsedMail } from './parse.ts'
import { InboundRefusal } from './refusal.ts'
import { NestedMessageFound, scanStructure } from './structure.ts'
import type { Reservation } from './reservations.ts'
import { storeInboundMessage, type StoredMessage } from './store.ts'

/**
 * A message this small without a line that could delimit a part has one MIME part, and
 * parsing it costs less CPU than handing it to a worker (figures in bench/README.md); the
 * most hostile shapes of this size parse in a few milliseconds. So it is parsed on the
 * event loop. Anything larger or multipart goes to the worker pool, and so does one that
 * turns out to nest a message (whose encoded body may hide parts from the scan).
 */
export const PARSE_ON_EVENT_LOOP_MAX_BYTES = 8 * 1024
/** Loaded with the first such message: a server that receives none keeps a lower idle RSS (bench/README.md). */
let parserHere: Promise<typeof import('./parse.ts')> | undefined

async function parse(
  s: Services,
  raw: Buffer,
  delimiters: number,
  envelopeFrom: string,
): Promise<{ mail: ParsedMail; raw: Buffer }> {
  if (delimiters > 0 || raw.byteLength > PARSE_ON_EVENT_LOOP_MAX_BYTES)
    return s.parser.parse(raw, envelopeFrom, s.config.limits)
  try {
    parserHere ??= import('./parse.ts')
    const { parseMail } = await parserHere
    return { mail: await parseMail(raw, envelopeFrom, s.config.limits, { onEventLoop: true }), raw }
  } catch (error) {
    if (error instanceof NestedMessageFound) return s.parser.parse(raw, envelopeFrom, s.config.limits)
    // What a worker would answer for the same failure.
    if (error instanceof InboundRefusal) throw error
    throw new InboundRefusal('unparseable', error instanceof Error ? error.message.slice(0, 200) : 'parse failed')
  }
}

interface ReceivedMessage {
  /** The DATA bytes; taken over: they may move to a parse worker and come back as the stored source. */
  raw: Buffer
  /** MAIL FROM, the sender when the headers name none. */
  envelopeFrom: string
  /** The transaction's reservations, one per admitted inbox; released whatever the outcome. */
  recipients: Reservation[]
  /**
   * Awaited between the parse and the store (the SMTP transport moves the message from its
   * parse gate to its store gate).
   */
  parsed?: () => Promise<void>
  /**
   * Called once the message is committed, before the sync its answer waits for (SQLite): the
   * SMTP transport lets the next large message into its store gate then.
   */
  committed?: () => void
}

/** Parses, checks and stores one message for its recipients; resolves once it is committed. */
export async function receiveMessage(
  s: Services,
  { raw, envelopeFrom, recipients, parsed, committed }: ReceivedMessage,
): Promise<StoredMessage[]> {
  try {
    if (raw.byteLength > s.config.limits.messageBytes)
      throw new InboundRefusal('message_too_large', `at most ${s.config.limits.messageBytes} bytes`)
    // A message too big for the event loop's parser is scanned by the worker that parses it
    // (parse-worker.ts): the scan of a 10 MiB message took 4–5 ms of the loop here.
    let delimiters = 1
    if (raw.byteLength <= PARSE_ON_EVENT_LOOP_MAX_BYTES) {
      const scan = scanStructure(raw, s.config.limits)
      if (scan.refusal) throw scan.refusal
      delimiters = scan.delimiters
    }
    const { mail, raw: source } = await parse(s, raw, delimiters, envelopeFrom)
    await parsed?.()
    // Read now: storing may hand the bytes to another thread (SQLite's blob stager).
    const size = source.byteLength
    let stored: StoredMessage[]
    try {
      stored = await storeInboundMessage(s, source, mail, recipients, committed)
    } catch (error) {
      if (error instanceof InboundRefusal) throw error // a limit of the new period, not a failure
      // A failing volume was logged once when it began (storage-health.ts); each message it
      // refuses is an ordinary smtp_refused line. Anything else is a bug worth a stack trace.
      if (!s.storageHealth.failed(error, 'mail'))
        s.logger.error('message_store_failed', { size_bytes: size, ...errorFields(error) })
      throw new InboundRefusal('storage_failed')
    }
    // PostgreSQL mode: storing mail works again (SQLite's commit already told the storage state).
    s.storageHealth.committed('mail')
    if (stored.length === 0) throw new InboundRefusal('unknown_recipient')
    return stored
  } finally {
    for (const reservation of recipients) s.reservations.release(reservation)
  }
}
