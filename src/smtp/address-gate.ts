/**
 * Counts open SMTP connections per client address (see clientKey) so that one address can
 * hold at most `perAddress` of them; the global SMTP_MAX_CLIENTS then always has room for
 * other senders while one address floods.
 */
export class AddressGate {
  private readonly open = new Map<string, number>()
  private readonly keyOf = new Map<string, string>()

  constructor(readonly perAddress: number) {}

  /** Counts the session in, or answers false when its address already holds its share. */
  enter(sessionId: string, key: string): boolean {
    const count = this.open.get(key) ?? 0
    if (count >= this.perAddress) return false
    this.open.set(key, count + 1)
    this.keyOf.set(sessionId, key)
    return true
  }

  /** Safe for sessions that were never counted in, and to call twice. */
  leave(sessionId: string): void {
    const key = this.keyOf.get(sessionId)
    if (key === undefined) return
    this.keyOf.delete(sessionId)
    const count = (this.open.get(key) ?? 1) - 1
    if (count > 0) this.open.set(key, count)
    else this.open.delete(key)
  }

  openFrom(key: string): number {
    return this.open.get(key) ?? 0
  }
}
