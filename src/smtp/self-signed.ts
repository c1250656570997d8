/**
 * The self-signed STARTTLS certificate for RECEIVING_DOMAIN, kept beside the database so
 * every start offers the same one. It is made by the `selfsigned` package in a short-lived
 * child process (self-signed-child.ts): loaded into the server, that library and its ASN.1
 * stack would hold its memory for the life of the process, for one use at first start
 * (figure in bench/README.md).
 */
import { createPrivateKey, X509Certificate } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Config } from '../config.ts'
import { errorFields, type Logger } from '../log.ts'
import type { SelfSignedPems, SelfSignedRequest } from './self-signed-child.ts'
import { checkedPair, type TlsMaterial } from './tls-material.ts'

const VALID_DAYS = 825 // the longest validity clients accept for a leaf certificate
const RENEW_BEFORE_MS = 30 * 86_400_000

export const selfSignedPaths = (databasePath: string) => {
  const folder = join(dirname(databasePath), 'smtp-tls')
  return { folder, cert: join(folder, 'self-signed-cert.pem'), key: join(folder, 'self-signed-key.pem') }
}

/** The child's program: the source beside this file, or its bundle beside dist/server.js. */
const CHILD_PROGRAM = fileURLToPath(
  new URL(import.meta.url.endsWith('.ts') ? './self-signed-child.ts' : './self-signed-child.js', import.meta.url),
)

/** Runs self-signed-child.ts in a child Bun; the PEMs come back as one JSON line on stdout. */
async function generate(domain: string, notBefore: number): Promise<SelfSignedPems> {
  const request: SelfSignedRequest = { domain, notBefore, notAfter: notBefore + VALID_DAYS * 86_400_000 }
  const child = Bun.spawn([process.execPath, CHILD_PROGRAM, JSON.stringify(request)], {
    stdout: 'pipe',
    stderr: 'pipe',
    env: { PATH: process.env.PATH ?? '' },
  })
  const [out, err, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ])
  if (code !== 0)
    throw new Error(`making the self-signed certificate failed (exit ${code}): ${err.trim().split('\n').pop()}`)
  return JSON.parse(out) as SelfSignedPems
}

/** The kept certificate if it still names the domain and has a month left; otherwise a new one. */
export async function selfSigned(config: Config, logger: Logger, now: number): Promise<TlsMaterial> {
  const paths = selfSignedPaths(config.databasePath)
  if (existsSync(paths.cert) && existsSync(paths.key)) {
    try {
      const material = checkedPair({ cert: readFileSync(paths.cert, 'utf8'), key: readFileSync(paths.key, 'utf8') })
      const x509 = new X509Certificate(material.cert)
      if (x509.checkHost(config.receivingDomain) && Date.parse(x509.validTo) - now > RENEW_BEFORE_MS) return material
    } catch (error) {
      logger.warn('smtp_tls_self_signed_unreadable', errorFields(error))
    }
  }
  const pems = await generate(config.receivingDomain, now - 3_600_000) // an hour of slack for a sender's clock
  mkdirSync(paths.folder, { recursive: true, mode: 0o700 })
  // Only the server's user may read the key.
  writeFileSync(paths.key, createPrivateKey(pems.private).export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 })
  writeFileSync(paths.cert, pems.cert, { mode: 0o644 })
  logger.info('smtp_tls_self_signed_created', {
    path: paths.cert,
    domain: config.receivingDomain,
    fingerprint: new X509Certificate(pems.cert).fingerprint256,
  })
  return { key: readFileSync(paths.key, 'utf8'), cert: pems.cert }
}
