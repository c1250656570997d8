/**
 * The SMTP transport: a receive-only listener (no AUTH, no relay; STARTTLS when given TLS
 * material). It refuses recipients at RCPT time, collects DATA up to the size limit (in
 * memory, or in the spool once it is big), and hands the bytes to the domain. The 250 reply is sent only
 * after the message is committed. The guards against floods and slow clients live in guards.ts.
 */
import type { SMTPServer, SMTPServerAddress, SMTPServerDataStream, SMTPServerSession } from 'smtp-server'
import { admitRecipient } from '../core/inbound/admission.ts'
import { receiveMessage } from '../core/inbound/receive.ts'
import { InboundRefusal } from '../core/inbound/refusal.ts'
import type { Reservation } from '../core/inbound/reservations.ts'
import type { Services } from '../core/services.ts'
import { errorFields } from '../log.ts'
import type { AppMetrics } from '../metrics/app-metrics.ts'
import { clientKey } from './client-key.ts'
import { GuardedSmtpServer } from './guarded-server.ts'
import { SmtpGuards } from './guards.ts'
import { MessageCollector } from './message-collector.ts'
import { ProxyTrust } from './proxy-trust.ts'
import { guardReply, smtpReply } from './replies.ts'
import { assertSizeCheckHook } from './size-declaration.ts'
import { isTlsFailure, type SmtpTls } from './tls.ts'

interface ConnectionState {
  closed: boolean
  /** The envelope object of the current transaction; smtp-server replaces it on RSET/MAIL/EHLO. */
  envelope: unknown
  reservations: Reservation[]
}

/** Parameters of the extensions we advertise (SIZE, 8BITMIME, SMTPUTF8); RFC 5321 §4.1.1.11: others get 555. */
const MAIL_PARAMETERS = new Set(['SIZE', 'BODY', 'SMTPUTF8'])
const RCPT_PARAMETERS = new Set<string>()
/** ENOSPC or EDQUOT: the volume (or the process's share of it) is full, a temporary condition. */
const isDiskFull = (error: unknown) => ['ENOSPC', 'EDQUOT'].includes((error as { code?: string }).code ?? '')
const hasUnknownParameter = (address: SMTPServerAddress, known: Set<string>) => Object.keys(address.args || {}).some((name) => !known.has(name.toUpperCase()))

export function createSmtpServer(s: Services, metrics: Pick<AppMetrics, 'adjustBufferedBytes'>, tls?: SmtpTls): SMTPServer {
  assertSizeCheckHook()
  const connections = new Map<string, ConnectionState>()
  const { limits } = s.config
  const tooLarge = new InboundRefusal('message_too_large', `at most ${limits.messageBytes} bytes`)
  const guards = new SmtpGuards(limits, s.logger, smtpReply(tooLarge).message, (delta) => metrics.adjustBufferedBytes(delta))

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

  const refuse = (session: SMTPServerSession, failure: unknown, extra: Record<string, unknown> = {}) => {
    // A failing volume met at RCPT or DATA is a 451 like any storage failure, logged once when
    // it begins (storage-health.ts), not as an error with a stack per message.
    const error = !(failure instanceof InboundRefusal) && s.storageHealth.failed(failure) ? new InboundRefusal('storage_failed') : failure
    if (!(error instanceof InboundRefusal)) s.logger.error('smtp_error', { session_id: session.id, ...errorFields(error) })
    else s.logger.info('smtp_refused', { session_id: session.id, reason: error.reason, remote: session.remoteAddress, ...extra })
    return smtpReply(error)
  }

  const unknownParameter = (session: SMTPServerSession) => {
    s.logger.info('smtp_refused', { session_id: session.id, reason: 'unknown_parameter', remote: session.remoteAddress })
    return guardReply('unknown_parameter')
  }

  const server = new GuardedSmtpServer(
    {
      name: s.config.receivingDomain,
      banner: 'Pigeonhole receive-only test inbox',
      authOptional: true,
      disabledCommands: tls ? ['AUTH'] : ['AUTH', 'STARTTLS'],
      hideSTARTTLS: !tls,
      ...tls?.options,
      size: limits.messageBytes, // advertised; MAIL FROM SIZE= over it is refused by smtp-server, in our words (size-declaration.ts)
      maxClients: limits.smtpMaxClients,
      socketTimeout: limits.smtpCommandTimeoutMs, // silence; the deadlines in guards.ts bound the rest
      logger: false,
      disableReverseLookup: true, // a PTR lookup per connection tells a test inbox nothing
      // Upstream holds every greeting a fixed 100 ms to catch early talkers; our pinned patch
      // (patches/) makes the hold ours to choose, none by default.
      greetingDelay: s.config.smtpGreetingDelayMs,
      closeTimeout: 5_000,

      onMailFrom(address, session, callback) {
        if (tls?.requireTls && !session.secure) callback(refuse(session, new InboundRefusal('tls_required')))
        else callback(hasUnknownParameter(address, MAIL_PARAMETERS) ? unknownParameter(session) : null)
        guards.of(session.id)?.progressed()
      },

      onRcptTo(address, session, callback) {
        guards.of(session.id)?.progressed()
        if (hasUnknownParameter(address, RCPT_PARAMETERS)) return callback(unknownParameter(session))
        try {
          const state = stateOf(session)
          const envelope = session.envelope
          const isLive = () => !state.closed && session.envelope === envelope
          const reservation = admitRecipient(s, { address: address.address, isLive, admitted: state.reservations })
          if (!state.reservations.includes(reservation)) state.reservations.push(reservation)
          callback()
        } catch (error) {
          const reply = refuse(session, error, { recipient_domain: address.address.split('@').pop() })
          if (error instanceof InboundRefusal) {
            const sender = session.envelope.mailFrom ? session.envelope.mailFrom.address : ''
            s.refusedDeliveries.record(address.address, error.inboxId, { at: s.clock.now(), sender, reply: `${reply.responseCode} ${reply.message}` })
          }
          callback(reply)
        }
      },

      onData(stream: SMTPServerDataStream, session, callback) {
        const state = stateOf(session)
        const recipients = state.reservations
        const deadlines = guards.of(session.id)
        deadlines?.dataStarted()
        const collector = new MessageCollector(guards.budget, clientKey(session.remoteAddress), limits.messageBytes, s.spool, stream)
        let ended = false
        const reply: typeof callback = (error, message) => {
          callback(error, message)
          deadlines?.replied()
        }
        const releaseRecipients = () => {
          for (const reservation of recipients) s.reservations.release(reservation)
        }
        stream.on('data', (chunk: Buffer) => {
          const change = collector.add(chunk)
          if (change === 'too_large') s.logger.info('smtp_data_dropped', { session_id: session.id, reason: change, remote: session.remoteAddress, held_bytes: guards.budget.held })
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
              s.logger.error('smtp_spool_failed', { session_id: session.id, size_bytes: size, ...errorFields(collected.error) })
              throw new InboundRefusal(isDiskFull(collected.error) ? 'insufficient_storage' : 'storage_failed')
            }
            // Read back from the spool inside the gate: what bounds memory is how much is parsed at once.
            const stored = await guards.parseGateFor(size).run(size, async () => {
              let raw: Buffer
              try {
                raw = await collected.load()
              } catch (error) {
                s.logger.error('smtp_spool_failed', { session_id: session.id, size_bytes: size, ...errorFields(error) })
                throw new InboundRefusal('storage_failed')
              }
              return receiveMessage(s, { raw, envelopeFrom, recipients }) // takes over raw
            })
            return stored
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
      },

      onClose(session) {
        guards.closed(session.id)
        const state = connections.get(session.id)
        if (!state) return
        state.closed = true
        for (const reservation of state.reservations) s.reservations.release(reservation)
        connections.delete(session.id)
      },
    },
    guards,
    SmtpGuards.refusalLine(),
    // With it on, a PROXY line is awaited from TRUSTED_PROXIES only (src/smtp/proxy-trust.ts).
    s.config.smtpProxyProtocol === 'on' ? new ProxyTrust(s.config.trustedProxies, limits.smtpGreetingTimeoutMs, s.logger) : null,
  )
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
