/**
 * The DATA phase of one SMTP transaction: the message streams into a collector (memory, or
 * the spool once it is big) up to the size limit, is read back inside a parse gate, and is
 * handed to the domain for the recipients admitted at RCPT. The 250 is sent only after the
 * message is committed; every other ending gives the recipients' reservations back.
 */
import type { SMTPServerDataStream, SMTPServerSession } from 'smtp-server'
import { receiveMessage } from '../core/inbound/receive.ts'
import { InboundRefusal } from '../core/inbound/refusal.ts'
import type { Reservation } from '../core/inbound/reservations.ts'
import type { Services } from '../core/common/services.ts'
import { errorFields } from '../log.ts'
import { clientKey } from './client-key.ts'
import type { SmtpGuards } from './guards.ts'
import { MessageCollector } from './message-collector.ts'
import type { SmtpReplyError } from './replies.ts'

/** What the listener shares with every DATA phase. */
export interface DataPhase {
  s: Services
  guards: SmtpGuards
  /** The refusal of a message over the size limit (its text names the limit). */
  tooLarge: InboundRefusal
  /** Logs a refusal or failure and turns it into the SMTP reply. */
  refuse(session: SMTPServerSession, failure: unknown, extra?: Record<string, unknown>): SmtpReplyError
}

type DataCallback = (error?: Error | null, message?: string) => void

/** ENOSPC or EDQUOT: the volume (or the process's share of it) is full, a temporary condition. */
const isDiskFull = (error: unknown) => ['ENOSPC', 'EDQUOT'].includes((error as { code?: string }).code ?? '')

export function receiveData(
  phase: DataPhase,
  recipients: Reservation[],
  stream: SMTPServerDataStream,
  session: SMTPServerSession,
  callback: DataCallback,
): void {
  const { s, guards, tooLarge, refuse } = phase
  const deadlines = guards.of(session.id)
  deadlines?.dataStarted()
  const collector = new MessageCollector(
    guards.budget,
    clientKey(session.remoteAddress),
    s.config.limits.messageBytes,
    s.spool,
    stream,
  )
  let ended = false
  const reply: DataCallback = (error, message) => {
    callback(error, message)
    deadlines?.replied()
  }
  const releaseRecipients = () => {
    for (const reservation of recipients) s.reservations.release(reservation)
  }
  stream.on('data', (chunk: Buffer) => {
    const change = collector.add(chunk)
    if (change === 'too_large')
      s.logger.info('smtp_data_dropped', {
        session_id: session.id,
        reason: change,
        remote: session.remoteAddress,
        held_bytes: guards.budget.held,
      })
  })
  // A connection cut mid-DATA destroys the stream without 'end': give the bytes back.
  stream.on('close', () => ended || collector.release())
  stream.on('end', () => {
    ended = true
    deadlines?.dataEnded()
    const started = performance.now()
    const envelopeFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : ''
    let size = 0
    const receive = async () => {
      const collected = await collector.finish()
      size = collected.size
      if (collected.kind === 'too_large') throw tooLarge
      if (collected.kind === 'spool_failed') {
        s.logger.error('smtp_spool_failed', {
          session_id: session.id,
          size_bytes: size,
          ...errorFields(collected.error),
        })
        throw new InboundRefusal(isDiskFull(collected.error) ? 'insufficient_storage' : 'storage_failed')
      }
      // Read back from the spool inside the gate: what bounds memory is how much is parsed at
      // once. A large message then moves to the store gate, so the next one can be parsed.
      const storeGate = guards.storeGateFor(size)
      let leaveStore: (() => void) | undefined
      try {
        return await guards.parseGateFor(size).run(size, async (leaveParse) => {
          let raw: Buffer
          try {
            raw = await collected.load()
          } catch (error) {
            s.logger.error('smtp_spool_failed', { session_id: session.id, size_bytes: size, ...errorFields(error) })
            throw new InboundRefusal('storage_failed')
          }
          const parsed = async () => {
            if (!storeGate) return
            leaveStore = await storeGate.take(size)
            leaveParse()
          }
          // Committed, its bytes are in the database: the next large message may write its
          // blobs while this one's WAL sync runs (the 250 still waits for the sync).
          const committed = () => leaveStore?.()
          return receiveMessage(s, { raw, envelopeFrom, recipients, parsed, committed }) // takes over raw
        })
      } finally {
        leaveStore?.()
      }
    }
    receive()
      .then(
        (stored) => {
          s.logger.info('smtp_message_stored', {
            session_id: session.id,
            message_ids: stored.map((m) => m.messageId),
            size_bytes: size,
            duration_ms: Math.round((performance.now() - started) * 100) / 100,
          })
          reply(null, `Message stored as ${stored.map((m) => m.messageId).join(' ')}`)
        },
        (error: unknown) => {
          releaseRecipients() // receiveMessage releases them too; these paths may not reach it
          reply(refuse(session, error, { size_bytes: size }))
        },
      )
      .finally(() => collector.release())
  })
}
