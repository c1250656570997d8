/**
 * Values the console shows once (a new API key, an invite link, a reset password) are
 * made by a POST, but shown on a GET it redirects to (post/redirect/get), so reloading
 * the page shows the value again instead of making a second key or invite.
 *
 * The value travels with the browser, not in the server: the POST's response sets a cookie
 * holding it sealed (AES-256-GCM) under a key derived from the browser's session token,
 * bound to the id the GET's URL names, with its end time inside. The server keeps nothing
 * (it stores only the session token's hash), so whichever machine answers the GET can open
 * it, and nobody without that session's token can: another session, even of the same user,
 * gets nothing, as does anyone after SHOWN_ONCE_MS.
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto'
import type { Clock } from '../clock.ts'

const SHOWN_ONCE_MS = 10 * 60_000

export type ShownValue =
  | { kind: 'api_key'; organizationId: string; name: string; key: string }
  | { kind: 'invite'; organizationId: string; link: string; role: string; expiresAt: string }
  | { kind: 'password'; email: string; password: string }
  | FailedForm

/**
 * A form that was refused, carried to the page its POST redirects to (post/redirect/get for
 * failures too: reloading shows the message again instead of sending the form again). Only
 * fields worth keeping are carried, never a password.
 */
export interface FailedForm {
  kind: 'failed_form'
  message: string
  status: number
  fields: Record<string, string>
  retryAfterSeconds?: number
}

/** 128 random bits, base64url: safe in a URL and in a cookie's name. */
const ID_PATTERN = /^[A-Za-z0-9_-]{22}$/
const IV_BYTES = 12
const TAG_BYTES = 16

const sealingKey = (sessionToken: string): Buffer =>
  createHmac('sha256', sessionToken).update('pigeonhole console shown once').digest()

export class ShownOnce {
  constructor(private readonly clock: Clock) {}

  /**
   * Seals the value for the session whose token is `sessionToken`: the id its GET page names, and the cookie's value.
   */
  seal(sessionToken: string, value: ShownValue): { id: string; sealed: string; maxAgeSeconds: number } {
    const id = randomBytes(16).toString('base64url')
    const iv = randomBytes(IV_BYTES)
    const cipher = createCipheriv('aes-256-gcm', sealingKey(sessionToken), iv)
    cipher.setAAD(Buffer.from(id))
    const plain = Buffer.from(JSON.stringify({ until: this.clock.now() + SHOWN_ONCE_MS, value }))
    const sealed = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]).toString('base64url')
    return { id, sealed, maxAgeSeconds: SHOWN_ONCE_MS / 1000 }
  }

  /** The value, for the session that sealed it and while it is held; otherwise undefined. */
  open<K extends ShownValue['kind']>(
    sessionToken: string | undefined,
    id: string | null,
    sealed: string | undefined,
    kind: K,
  ): Extract<ShownValue, { kind: K }> | undefined {
    if (!sessionToken || !id || !sealed || !ID_PATTERN.test(id)) return undefined
    const bytes = Buffer.from(sealed, 'base64url')
    if (bytes.length <= IV_BYTES + TAG_BYTES) return undefined
    let held: { until: number; value: ShownValue }
    try {
      const decipher = createDecipheriv('aes-256-gcm', sealingKey(sessionToken), bytes.subarray(0, IV_BYTES))
      decipher.setAAD(Buffer.from(id))
      decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES))
      held = JSON.parse(
        Buffer.concat([decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)), decipher.final()]).toString(
          'utf8',
        ),
      )
    } catch {
      return undefined // another session's cookie, or one tampered with
    }
    if (held.until <= this.clock.now() || held.value.kind !== kind) return undefined
    return held.value as Extract<ShownValue, { kind: K }>
  }
}
