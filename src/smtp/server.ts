/**
 * The SMTP transport: a receive-only listener (no AUTH, no relay; STARTTLS when given TLS
 * material). It refuses recipients at RCPT time, collects DATA up to the size limit, and
 * hands the bytes to the domain. The 250 reply is sent only after the message is committed.
 */
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server'
import { admitRecipient } from '../core/inbound/admission.ts'
import { receiveMessage } from '../core/inbound/receive.ts'
import { InboundRefusal } from '../core/inbound/refusal.ts'
import type { Reservation } from '../core/inbound/reservations.ts'
import type { Services } from '../core/services.ts'
import { errorFields } from '../log.ts'
import { smtpReply } from './replies.ts'
import { isTlsFailure, type SmtpTls } from './tls.ts'

interface ConnectionState {
  closed: boolean
  /** The envelope object of the current transaction; smtp-server replaces it on RSET/MAIL/EHLO. */
  envelope: unknown
  reservations: Reservation[]
}

export function createSmtpServer(s: Services, tls?: SmtpTls): SMTPServer {
  const connections = new Map<string, ConnectionState>()
  const { limits } = s.config

  const stateOf = (session: SMTPServerSession): ConnectionState => {
    let state = connections.get(session.id)
    if (!state) {
      state = { closed: false, envelope: session.envelope, reservations: [] }
      connections.set(session.id, state)
    }
    if (state.envelope !== session.envelope) {
      // A new transaction began (RSET, MAIL FROM after a finished one): drop the old holds.
      for (const reservation of state.reservations) s.reservations.release(reservation)
      state.envelope = session.envelope
      state.reservations = []
    }
    return state
  }

  const refuse = (session: SMTPServerSession, error: unknown, extra: Record<string, unknown> = {}) => {
    if (!(error instanceof InboundRefusal)) s.logger.error('smtp_error', { session_id: session.id, ...errorFields(error) })
    else s.logger.info('smtp_refused', { session_id: session.id, reason: error.reason, remote: session.remoteAddress, ...extra })
    return smtpReply(error)
  }

  const server = new SMTPServer({
    name: s.config.receivingDomain,
    banner: 'Pigeonhole receive-only test inbox',
    authOptional: true,
    disabledCommands: tls ? ['AUTH'] : ['AUTH', 'STARTTLS'],
    hideSTARTTLS: !tls,
    ...tls?.options,
    size: limits.messageBytes, // advertised; MAIL FROM SIZE= over it is refused by smtp-server
    maxClients: limits.smtpMaxClients,
    logger: false,
    disableReverseLookup: true, // a PTR lookup per connection tells a test inbox nothing (smtp-server still holds each greeting 100 ms to catch early talkers; not configurable)
    closeTimeout: 5_000,

    onMailFrom(_address, session, callback) {
      if (tls?.requireTls && !session.secure) return callback(refuse(session, new InboundRefusal('tls_required')))
      callback()
    },

    onRcptTo(address, session, callback) {
      try {
        const state = stateOf(session)
        const envelope = session.envelope
        const isLive = () => !state.closed && session.envelope === envelope
        const reservation = admitRecipient(s, address.address, isLive, state.reservations)
        if (!state.reservations.includes(reservation)) state.reservations.push(reservation)
        callback()
      } catch (error) {
        callback(refuse(session, error, { recipient_domain: address.address.split('@').pop() }))
      }
    },

    onData(stream: SMTPServerDataStream, session, callback) {
      const state = stateOf(session)
      const recipients = state.reservations
      const chunks: Buffer[] = []
      let size = 0
      let held = 0 // bytes of `chunks`, reported to the metrics until the message is stored or dropped
      const letGo = () => {
        s.metrics.adjustBufferedBytes(-held)
        held = 0
      }
      stream.once('close', () => {
        if (!stream.readableEnded) letGo() // the client left mid-DATA
      })
      stream.on('data', (chunk: Buffer) => {
        size += chunk.length
        if (size > limits.messageBytes) return // keep reading past the limit, but do not keep the bytes
        chunks.push(chunk)
        held += chunk.length
        s.metrics.adjustBufferedBytes(chunk.length)
      })
      stream.on('end', () => {
        const started = performance.now()
        if (stream.sizeExceeded || size > limits.messageBytes) {
          for (const reservation of recipients) s.reservations.release(reservation)
          letGo()
          return callback(refuse(session, new InboundRefusal('message_too_large', `at most ${limits.messageBytes} bytes`), { size_bytes: size }))
        }
        const raw = Buffer.concat(chunks, size)
        const envelopeFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : ''
        receiveMessage(s, raw, envelopeFrom, recipients).then(
          (stored) => {
            letGo()
            s.logger.info('smtp_message_stored', {
              session_id: session.id,
              message_ids: stored.map((m) => m.messageId),
              size_bytes: size, // raw itself was handed to the parser
              duration_ms: Math.round((performance.now() - started) * 100) / 100,
            })
            callback(null, `Message stored as ${stored.map((m) => m.messageId).join(' ')}`)
          },
          (error: unknown) => {
            letGo()
            callback(refuse(session, error, { size_bytes: size }))
          },
        )
      })
    },

    onClose(session) {
      const state = connections.get(session.id)
      if (!state) return
      state.closed = true
      for (const reservation of state.reservations) s.reservations.release(reservation)
      connections.delete(session.id)
    },
  })
  // A failed handshake is the client's problem: one short line, not a stack trace (Bun reports it twice).
  const reported = new WeakSet<object>()
  server.on('error', (error) => {
    if (!isTlsFailure(error)) return s.logger.error('smtp_server_error', errorFields(error))
    if (reported.has(error)) return
    reported.add(error)
    s.logger.warn('smtp_tls_failed', { error: error.message, remote: (error as { meta?: { remoteAddress?: string } }).meta?.remoteAddress })
  })
  return server
}
