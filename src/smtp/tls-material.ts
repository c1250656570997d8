/**
 * A certificate and its key as PEM text: what the SMTP listener's STARTTLS serves, whether
 * read from the operator's files (tls.ts) or made for RECEIVING_DOMAIN (self-signed.ts).
 * Both sources check a pair the same way before using it.
 */
import { createSecureContext } from 'node:tls'

export interface TlsMaterial {
  key: string
  cert: string
}

/** Throws unless the key belongs to the certificate (createSecureContext checks the pair). */
export function checkedPair(material: TlsMaterial): TlsMaterial {
  createSecureContext({ key: material.key, cert: material.cert })
  return material
}
