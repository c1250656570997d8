/**
 * Random bearer tokens (sessions, invites, the setup link): 256 bits in the link or cookie,
 * only SHA-256 stored. In helpers/ because three entities use it and none owns it.
 */
import { createHash, randomBytes } from 'node:crypto'

export const newToken = (): string => randomBytes(32).toString('base64url')

export const sha256Hex = (value: string): string => createHash('sha256').update(value).digest('hex')

/** Tokens we hand out are 43 base64url characters; anything else is refused before a lookup. */
export const looksLikeToken = (value: unknown): value is string =>
  typeof value === 'string' && /^[A-Za-z0-9_-]{43}$/.test(value)
