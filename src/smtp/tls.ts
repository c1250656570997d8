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
import { type Config, ConfigError } from '../config.ts'
import type { Logger } from '../log.ts'
import { selfSigned } from './self-signed.ts'
import { checkedPair, type TlsMaterial } from './tls-material.ts'

/** Options spread into the SMTPServer constructor: STARTTLS on, TLS 1.2 or newer. */
interface SmtpTlsOptions extends TlsMaterial {
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

/** One of the operator's files; unreadable, it is a configuration error naming its variable. */
function readSettingFile(variable: string, file: string): string {
  try {
    return readFileSync(file, 'utf8')
  } catch (error) {
    throw new ConfigError(variable, `cannot read "${file}" (${(error as NodeJS.ErrnoException).code ?? String(error)})`)
  }
}

function readPair(certFile: string, keyFile: string): TlsMaterial {
  const material = {
    cert: readSettingFile('SMTP_TLS_CERT_FILE', certFile),
    key: readSettingFile('SMTP_TLS_KEY_FILE', keyFile),
  }
  try {
    return checkedPair(material)
  } catch (error) {
    throw new ConfigError(
      'SMTP_TLS_KEY_FILE',
      `with SMTP_TLS_CERT_FILE is not a PEM key and certificate that belong ` +
        `together (${error instanceof Error ? error.message : String(error)})`,
    )
  }
}

/** Errors smtp-server reports for a STARTTLS handshake that went wrong (garbage, old protocol, reset). */
export const isTlsFailure = (error: unknown): error is Error =>
  error instanceof Error &&
  ((error as { code?: unknown }).code === 'TLSError' || /SSL routines|TLS/.test(error.message))

export async function prepareSmtpTls(config: Config, logger: Logger, now = Date.now()): Promise<SmtpTls> {
  const fromFiles = config.smtpTlsCertFile !== ''
  const material = fromFiles
    ? readPair(config.smtpTlsCertFile, config.smtpTlsKeyFile)
    : await selfSigned(config, logger, now)
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
