/**
 * STARTTLS material for the SMTP listener. The operator's PEM files (SMTP_TLS_CERT_FILE,
 * SMTP_TLS_KEY_FILE) are re-read on SIGHUP and when either file changes, so a renewed
 * certificate needs no restart. Without them a self-signed certificate for RECEIVING_DOMAIN
 * is made once and kept beside the database: senders that insist on TLS (nodemailer's
 * `requireTLS`) work out of the box, and MTAs accept an unverified certificate for
 * opportunistic STARTTLS.
 */
import { X509Certificate } from 'node:crypto'
import { readFileSync, unwatchFile, watchFile } from 'node:fs'
import { createSecureContext } from 'node:tls'
import type { Config } from '../config.ts'
import type { Logger } from '../log.ts'
import { selfSigned } from './self-signed.ts'

export interface TlsMaterial {
  key: string
  cert: string
}

/** Options spread into the SMTPServer constructor: STARTTLS on, TLS 1.2 or newer. */
export interface SmtpTlsOptions extends TlsMaterial {
  minVersion: 'TLSv1.2'
}

export interface SmtpTls {
  source: 'files' | 'self-signed'
  options: SmtpTlsOptions
  requireTls: boolean
  /** Re-reads the operator's files and hands them to `apply`; a bad pair keeps the old one. */
  reload(apply: (material: TlsMaterial) => void): boolean
  /** Reloads on SIGHUP and on file changes; returns the function that stops watching. */
  watch(apply: (material: TlsMaterial) => void): () => void
}

/** A stat every few seconds is cheaper than a lost inotify watch after an atomic rename. */
const WATCH_INTERVAL_MS = 2_000

/** Throws unless the key belongs to the certificate (createSecureContext checks the pair). */
function checkedPair(material: TlsMaterial): TlsMaterial {
  createSecureContext({ key: material.key, cert: material.cert })
  return material
}

function readPair(certFile: string, keyFile: string): TlsMaterial {
  return checkedPair({ cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8') })
}

/** Errors smtp-server reports for a STARTTLS handshake that went wrong (garbage, old protocol, reset). */
export const isTlsFailure = (error: unknown): error is Error => error instanceof Error && ((error as { code?: unknown }).code === 'TLSError' || /SSL routines|TLS/.test(error.message))

export async function prepareSmtpTls(config: Config, logger: Logger, now = Date.now()): Promise<SmtpTls> {
  const fromFiles = config.smtpTlsCertFile !== ''
  const material = fromFiles ? readPair(config.smtpTlsCertFile, config.smtpTlsKeyFile) : await selfSigned(config, logger, now)
  const describe = (cert: string) => {
    const x509 = new X509Certificate(cert)
    return { subject: x509.subject.replace(/\n/g, ', '), valid_to: x509.validTo, fingerprint: x509.fingerprint256 }
  }
  logger.info('smtp_tls_ready', { source: fromFiles ? 'files' : 'self-signed', ...describe(material.cert) })

  const reload = (apply: (material: TlsMaterial) => void) => {
    if (!fromFiles) return false
    try {
      const next = readPair(config.smtpTlsCertFile, config.smtpTlsKeyFile)
      apply(next)
      logger.info('smtp_tls_reloaded', describe(next.cert))
      return true
    } catch (error) {
      // A renewal caught half-written (cert new, key old) fails the pair check; the next change retries.
      logger.warn('smtp_tls_reload_failed', { error: error instanceof Error ? error.message : String(error) })
      return false
    }
  }

  return {
    source: fromFiles ? 'files' : 'self-signed',
    options: { ...material, minVersion: 'TLSv1.2' },
    requireTls: config.smtpRequireTls === 'true',
    reload,
    watch(apply) {
      if (!fromFiles) return () => {}
      const onHangup = () => reload(apply)
      const onChange = (current: { mtimeMs: number }, previous: { mtimeMs: number }) => {
        if (current.mtimeMs !== previous.mtimeMs) reload(apply)
      }
      process.on('SIGHUP', onHangup)
      const files = [config.smtpTlsCertFile, config.smtpTlsKeyFile]
      for (const file of files) watchFile(file, { interval: WATCH_INTERVAL_MS, persistent: false }, onChange)
      return () => {
        process.off('SIGHUP', onHangup)
        for (const file of files) unwatchFile(file, onChange)
      }
    },
  }
}
