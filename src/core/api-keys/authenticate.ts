/**
 * API key format and checks. Key: `ph_live_` + 16 hex public id + `_` + 48 hex secret.
 * Only SHA-256 of the secret is stored; the secret is random (192 bits), so a slow
 * password hash would add latency to every request without adding safety.
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import { isoTime } from '../../clock.ts'
import { randomHex } from '../../ids.ts'
import type { Services } from '../common/services.ts'
import { DomainError } from '../common/errors.ts'
import { resolveOrgLimits, type OrgLimits } from '../limits/organization-limits.ts'

const KEY_PREFIX = 'ph_live_'
const KEY_PATTERN = /^ph_live_([0-9a-f]{16})_([0-9a-f]{48})$/

export interface Principal {
  organizationId: string
  keyPublicId: string
  /** The organisation's own limits, read with the key (one query per request). */
  limits: OrgLimits
}

export const hashSecret = (secret: string): string => createHash('sha256').update(secret).digest('hex')

export function generateApiKey(): { key: string; publicId: string; secretSha256: string } {
  const publicId = randomHex(8)
  const secret = randomHex(24)
  return { key: `${KEY_PREFIX}${publicId}_${secret}`, publicId, secretSha256: hashSecret(secret) }
}

export function parseApiKey(token: string): { publicId: string; secret: string } | null {
  const match = KEY_PATTERN.exec(token)
  return match ? { publicId: match[1]!, secret: match[2]! } : null
}

export const invalidKey = () => new DomainError('invalid_api_key', 'Missing, malformed, unknown or revoked API key.')

/**
 * Checks the Authorization header. The format is checked before the database is touched; the
 * key and its organisation's limits come from one read (prepared once, on SQLite).
 */
export async function authenticate(
  s: Pick<Services, 'store' | 'clock' | 'config' | 'storageHealth'>,
  authorization: string | null,
): Promise<Principal> {
  // The auth scheme is case-insensitive (RFC 9110 section 11.1): `bearer` is as valid as `Bearer`.
  const match = authorization ? /^Bearer +([^\s]+)$/i.exec(authorization) : null
  const parsed = match ? parseApiKey(match[1]!) : null
  if (!parsed) throw invalidKey()
  const row = await s.store.accounts.keyForAuthentication(parsed.publicId)
  // Hash both sides so the comparison is constant-time and length-independent.
  const given = Buffer.from(hashSecret(parsed.secret), 'hex')
  const stored = Buffer.from(row?.secretSha256 ?? '0'.repeat(64), 'hex')
  if (!row || !timingSafeEqual(given, stored) || row.revokedAt) throw invalidKey()
  const now = s.clock.now()
  // At most one write a minute per key: the console shows the time to the minute.
  if (!row.lastUsedAt || now - Date.parse(row.lastUsedAt) >= 60_000) {
    try {
      await s.store.accounts.markKeyUsed({ publicId: parsed.publicId, at: isoTime(now) })
    } catch (error) {
      // Best effort: on a full, read-only or failing volume reads and deletes must still pass
      // authentication (the stamp is a convenience for the console, not a rule).
      if (!s.storageHealth.kindOf(error)) throw error
    }
  }
  return {
    organizationId: row.organizationId,
    keyPublicId: parsed.publicId,
    limits: resolveOrgLimits(row, s.config.limits),
  }
}
