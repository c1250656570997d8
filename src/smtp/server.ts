/**
 * The SMTP transport: a receive-only listener (no AUTH, no relay; STARTTLS when given TLS
 * material). It refuses recipients at RCPT time and hands DATA to data-phase.ts, which
 * collects it up to the size limit and answers 250 only after the message is committed.
 * The guards against floods and slow clients live in guards.ts.
 */
import type { SMTPServerAddress, SMTPServerDataStream, SMTPServerSession } from 'smtp-server'
import { admissionBoundMs, admitRecipientWithin } from '../core/inbound/admission.ts'
import { InboundRefusal } from '../core/inbound/refusal.ts'
import type { Reservation } from '../core/inbound/reservations.ts'
import type { Services } from '../core/common/services.ts'
import { errorFields } from '../log.ts'
import type { AppMetrics } from '../metrics/app-metrics.ts'
import { type DataPhase, receiveData } from './data-phase.ts'
import { GuardedSmtpServer } from './guarded-server.ts'
import { SmtpGuards } from './guards.ts'
import { ProxyLineWatch } from './proxy-lines.ts'
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
const hasUnknownParameter = (address: SMTPServerAddress, known: Set<string>) =>
  Object.keys(address.args || {}).some((name) => !known.has(name.toUpperCase()))

export function createSmtpServer(
  s: Services,
  metrics: Pick<AppMetrics, 'adjustBufferedBytes' | 'proxyLines'>,
  tls?: SmtpTls,
): GuardedSmtpServer {
  assertSizeCheckHook()
  const connections = new Map<string, ConnectionState>()
  const { limits } = s.config
  const tooLarge = new InboundRefusal('message_too_large', `at most ${limits.messageBytes} bytes`)
  const guards = new SmtpGuards(limits, s.logger, smtpReply(tooLarge).message, (delta) =>
    metrics.adjustBufferedBytes(delta),
  )

  const stateOf = (session: SMTPServerSession): ConnectionState => {
    let state = connections.get(session.id)
    if (!state) {
      state = { closed: false, envelope: session.envelope, reservations: [] }
      connections.set(session.id, state)
    }
    if (state.envelope !== session.envelope) {
      // A new transaction began (RSET, MAIL FROM after a finished one): drop the old holds.
      releaseIfReset(state)
      state.envelope = session.envelope
    }
    return state
  }

  /** Releases the transaction's units (a reset or a finished DATA); the next transaction starts with none. */
  const releaseIfReset = (state: ConnectionState) => {
    for (const reservation of state.reservations) s.reservations.release(reservation)
    state.reservations = []
  }

  const refuse = (session: SMTPServerSession, failure: unknown, extra: Record<string, unknown> = {}) => {
    // A failing volume met at RCPT or DATA is a 451 like any storage failure, logged once when
    // it begins (storage-health.ts), not as an error with a stack per message.
    const error =
      !(failure instanceof InboundRefusal) && s.storageHealth.failed(failure, 'mail')
        ? new InboundRefusal('storage_failed')
        : failure
    if (!(error instanceof InboundRefusal))
      s.logger.error('smtp_error', { session_id: session.id, ...errorFields(error) })
    else
      s.logger.info('smtp_refused', {
        session_id: session.id,
        reason: error.reason,
        remote: session.remoteAddress,
        ...extra,
      })
    return smtpReply(error)
  }

  const unknownParameter = (session: SMTPServerSession) => {
    s.logger.info('smtp_refused', {
      session_id: session.id,
      reason: 'unknown_parameter',
      remote: session.remoteAddress,
    })
    return guardReply('unknown_parameter')
  }

  const dataPhase: DataPhase = { s, guards, tooLarge, refuse }

  const server = new GuardedSmtpServer(
    {
      name: s.config.receivingDomain,
      banner: 'Pigeonhole receive-only test inbox',
      authOptional: true,
      disabledCommands: tls ? ['AUTH'] : ['AUTH', 'STARTTLS'],
      hideSTARTTLS: !tls,
      ...tls?.options,
      // Advertised; MAIL FROM SIZE= over it is refused by smtp-server, in our words (size-declaration.ts)
      size: limits.messageBytes,
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
        const state = stateOf(session)
        const envelope = session.envelope
        const isLive = () => !state.closed && session.envelope === envelope
        // Answered within the statement timeout plus 2 s whatever the database does (admission.ts).
        admitRecipientWithin(
          s,
          { address: address.address, isLive, admitted: state.reservations },
          admissionBoundMs(s),
        ).then(
          (reservation) => {
            if (!state.reservations.includes(reservation)) state.reservations.push(reservation)
            callback()
          },
          (error: unknown) => {
            const reply = refuse(session, error, { recipient_domain: address.address.split('@').pop() })
            if (error instanceof InboundRefusal) {
              const sender = session.envelope.mailFrom ? session.envelope.mailFrom.address : ''
              s.refusedDeliveries.record(address.address, error.inboxId, {
                at: s.clock.now(),
                sender,
                reply: `${reply.responseCode} ${reply.message}`,
              })
            }
            callback(reply)
          },
        )
      },

      onData(stream: SMTPServerDataStream, session, callback) {
        receiveData(dataPhase, stateOf(session).reservations, stream, session, callback)
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
    s.config.smtpProxyProtocol === 'on'
      ? new ProxyTrust(
          s.config.trustedProxies,
          limits.smtpGreetingTimeoutMs,
          s.logger,
          new ProxyLineWatch(s.clock, s.logger, s.config.trustedProxies, (outcome) =>
            metrics.proxyLines.inc({ outcome }),
          ),
        )
      : null,
    // A reset transaction gives its units back now (stateOf sees the new envelope).
    (sessionId) => {
      const state = connections.get(sessionId)
      if (state && !state.closed) releaseIfReset(state)
    },
  )
  // PostgreSQL mode's stop hands new connections to the other machines: the accepted ones are served to their end.
  server.serveAcceptedSessions = s.config.databaseUrl !== ''
  // A failed handshake is the client's problem: one short line, not a stack trace (Bun reports it twice).
  const reported = new WeakSet<object>()
  server.on('error', (error) => {
    if (!isTlsFailure(error)) return s.logger.error('smtp_server_error', errorFields(error))
    if (reported.has(error)) return
    reported.add(error)
    s.logger.warn('smtp_tls_failed', {
      error: error.message,
      remote: (error as { meta?: { remoteAddress?: string } }).meta?.remoteAddress,
    })
  })
  return server
}
