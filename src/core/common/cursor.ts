/**
 * Opaque pagination cursors. A cursor names the last item of a page (its timestamp and id,
 * for keyset paging) and the listing it belongs to, signed with HMAC so a cursor that we
 * did not issue for this very listing (tampered, another organisation's, another inbox's)
 * is refused with invalid_cursor instead of silently paging something else.
 */
import { createHmac, timingSafeEqual } from 'node:crypto'
import { randomHex } from '../../ids.ts'
import type { InboxStore } from '../../storage/port/inboxes.ts'
import { DomainError } from './errors.ts'

export interface CursorPosition {
  /** Sort timestamp of the last item returned (RFC 3339). */
  at: string
  /** Id of the last item returned (tie-breaker within one millisecond). */
  id: string
}

export class CursorCodec {
  constructor(private readonly secret: string) {}

  /**
   * Reads the signing secret from the database, creating it once, so cursors survive restarts
   * and every machine on one database signs alike (the first to start stores its candidate).
   */
  static async fromStore(store: Pick<InboxStore, 'cursorSecret'>): Promise<CursorCodec> {
    return new CursorCodec(await store.cursorSecret(randomHex(32)))
  }

  encode(listing: string, position: CursorPosition): string {
    const payload = Buffer.from(JSON.stringify([position.at, position.id])).toString('base64url')
    return `${payload}.${this.sign(listing, payload)}`
  }

  decode(listing: string, cursor: string): CursorPosition {
    const invalid = () =>
      new DomainError('invalid_cursor', 'cursor must be a next_cursor value returned by this listing.')
    const [payload, signature, extra] = cursor.split('.')
    if (!payload || !signature || extra !== undefined || cursor.length > 512) throw invalid()
    const expected = Buffer.from(this.sign(listing, payload))
    const given = Buffer.from(signature)
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) throw invalid()
    try {
      const [at, id] = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as unknown[]
      if (typeof at !== 'string' || typeof id !== 'string') throw invalid()
      return { at, id }
    } catch {
      throw invalid()
    }
  }

  private sign(listing: string, payload: string): string {
    return createHmac('sha256', this.secret).update(`${listing}\n${payload}`).digest('base64url').slice(0, 32)
  }
}
