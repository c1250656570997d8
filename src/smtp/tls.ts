/**
 * STARTTLS material for the SMTP listener. The operator's PEM files (SMTP_TLS_CERT_FILE,
 * SMTP_TLS_KEY_FILE) are re-read on SIGHUP and when either file changes, so a renewed
 * certificate needs no restart. Without them a self-signed certificate for RECEIVING_DOMAIN
 * is made once and kept beside the database: senders that insist on TLS (nodemailer's
 * `requireTLS`) work out of the box, and MTAs accept an unverified certificate for
 * opportunistic STARTTLS.
 */
import { X509Certificate, createPrivateKey } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, unwatchFile, watchFile, writeFileSync } from 'node:fs'
import { createSecureContext } from 'node:tls'
import { dirname, join } from 'node:path'
import type { Config } from '../config.ts'
import { errorFields, type Logger } from '../log.ts'

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

const SELF_SIGNED_DAYS = 825 // the longest validity clients accept for a leaf certificate
const RENEW_BEFORE_MS = 30 * 86_400_000
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

export const selfSignedPaths = (databasePath: string) => {
  const folder = join(dirname(databasePath), 'smtp-tls')
  return { folder, cert: join(folder, 'self-signed-cert.pem'), key: join(folder, 'self-signed-key.pem') }
}

/** The kept certificate if it still names the domain and has a month left; otherwise a new one. */
async function selfSigned(config: Config, logger: Logger, now: number): Promise<TlsMaterial> {
  const paths = selfSignedPaths(config.databasePath)
  if (existsSync(paths.cert) && existsSync(paths.key)) {
    try {
      const material = readPair(paths.cert, paths.key)
      const x509 = new X509Certificate(material.cert)
      if (x509.checkHost(config.receivingDomain) && Date.parse(x509.validTo) - now > RENEW_BEFORE_MS) return material
    } catch (error) {
      logger.warn('smtp_tls_self_signed_unreadable', errorFields(error))
    }
  }
  // Loaded only to make a certificate: the library and its ASN.1 stack add ~18 MiB of RSS.
  const { generate } = await import('selfsigned')
  const notBeforeDate = new Date(now - 3_600_000) // an hour of slack for a sender's clock
  const pems = await generate([{ name: 'commonName', value: config.receivingDomain }], {
    keyType: 'ec', // P-256: generated in milliseconds, accepted by every TLS 1.2 client
    algorithm: 'sha256',
    notBeforeDate,
    notAfterDate: new Date(notBeforeDate.getTime() + SELF_SIGNED_DAYS * 86_400_000),
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: config.receivingDomain }] }],
  })
  mkdirSync(paths.folder, { recursive: true, mode: 0o700 })
  // The key in PKCS#8 as generated; only the server's user may read it.
  writeFileSync(paths.key, createPrivateKey(pems.private).export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 })
  writeFileSync(paths.cert, pems.cert, { mode: 0o644 })
  logger.info('smtp_tls_self_signed_created', { path: paths.cert, domain: config.receivingDomain, fingerprint: new X509Certificate(pems.cert).fingerprint256 })
  return { key: readFileSync(paths.key, 'utf8'), cert: pems.cert }
}

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
