/**
 * Concurrent long polls per key and per organisation: the organisation's own limits
 * (LIMIT_LONG_POLLS_PER_KEY and LIMIT_LONG_POLLS_PER_ORG unless the operator set its own).
 * A slot is held from the start of a waiting request until it answers or its client
 * disconnects.
 */
import type { Principal } from './api-keys/authenticate.ts'
import { DomainError } from './errors.ts'

export class LongPollSlots {
  private held = new Map<string, number>()

  /** Takes a slot or throws 429; the returned function frees it (calling it twice is harmless). */
  acquire(principal: Principal): () => void {
    const limits = principal.limits
    const keySlot = `key:${principal.keyPublicId}`
    const orgSlot = `org:${principal.organizationId}`
    if ((this.held.get(keySlot) ?? 0) >= limits.longPollsPerKey || (this.held.get(orgSlot) ?? 0) >= limits.longPollsPerOrg) {
      throw new DomainError('long_poll_limit_exceeded', `Too many concurrent waits: at most ${limits.longPollsPerKey} per key and ${limits.longPollsPerOrg} per organization.`)
    }
    this.bump(keySlot, 1)
    this.bump(orgSlot, 1)
    let released = false
    return () => {
      if (released) return
      released = true
      this.bump(keySlot, -1)
      this.bump(orgSlot, -1)
    }
  }

  /** Slots currently held; for tests and health detail. */
  count(principal: Pick<Principal, 'organizationId' | 'keyPublicId'>): { key: number; org: number } {
    return { key: this.held.get(`key:${principal.keyPublicId}`) ?? 0, org: this.held.get(`org:${principal.organizationId}`) ?? 0 }
  }

  /** Waits held across every key (each wait holds one key slot); for the metrics. */
  total(): number {
    let sum = 0
    for (const [slot, held] of this.held) if (slot.startsWith('key:')) sum += held
    return sum
  }

  private bump(slot: string, by: number): void {
    const next = (this.held.get(slot) ?? 0) + by
    if (next <= 0) this.held.delete(slot)
    else this.held.set(slot, next)
  }
}
