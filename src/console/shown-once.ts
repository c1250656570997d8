/**
 * Values the console shows once (a new API key, an invite link, a reset password) are
 * made by a POST, but shown on a GET it redirects to (post/redirect/get), so reloading
 * the page shows the value again instead of making a second key or invite. The value is
 * held here, in memory, for SHOWN_ONCE_MS and only for the session that made it: another
 * session, or the same one after that time, gets nothing. Not persisted: after a restart
 * the page says the value is gone (revoke and make a new one), never a stored secret.
 */
import { newToken } from '../core/helpers/tokens.ts'
import type { Clock } from '../clock.ts'

export const SHOWN_ONCE_MS = 10 * 60_000
/** Bounds memory whatever a session does: the oldest entries go first. */
const MAX_HELD = 1000

export type ShownValue =
  | { kind: 'api_key'; organizationId: string; name: string; key: string }
  | { kind: 'invite'; organizationId: string; link: string; role: string; expiresAt: string }
  | { kind: 'password'; email: string; password: string }

interface Held {
  sessionKey: string
  value: ShownValue
  until: number
}

export class ShownOnce {
  private readonly held = new Map<string, Held>()

  constructor(private readonly clock: Clock) {}

  /** Holds a value for the session; returns the id its GET page names in the URL. */
  put(sessionKey: string, value: ShownValue): string {
    this.sweep()
    while (this.held.size >= MAX_HELD) this.held.delete(this.held.keys().next().value!)
    const id = newToken()
    this.held.set(id, { sessionKey, value, until: this.clock.now() + SHOWN_ONCE_MS })
    return id
  }

  /** The value, for the session that made it and while it is held; otherwise undefined. */
  get<K extends ShownValue['kind']>(sessionKey: string | undefined, id: string | null, kind: K): Extract<ShownValue, { kind: K }> | undefined {
    if (!sessionKey || !id) return undefined
    const entry = this.held.get(id)
    if (!entry || entry.sessionKey !== sessionKey || entry.value.kind !== kind) return undefined
    if (entry.until <= this.clock.now()) {
      this.held.delete(id)
      return undefined
    }
    return entry.value as Extract<ShownValue, { kind: K }>
  }

  private sweep(): void {
    const now = this.clock.now()
    for (const [id, entry] of this.held) if (entry.until <= now) this.held.delete(id)
  }
}
