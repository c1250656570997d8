/**
 * Concurrent long polls per key and per organisation: the organisation's own limits
 * (LIMIT_LONG_POLLS_PER_KEY and LIMIT_LONG_POLLS_PER_ORG unless the operator set its own).
 * A slot is held from the start of a waiting request until it answers or its client
 * disconnects. Counted in memory for one process (SQLite mode), or as leases every machine
 * sees (PostgreSQL mode), with this machine's own count kept beside them for the metrics
 * and the stop's drain.
 */
import type { Principal } from '../api-keys/authenticate.ts'
import { DomainError } from '../common/errors.ts'

/** Takes a slot or throws 429; the returned function frees it (calling it twice is harmless). */
export interface LongPollAdmission {
  acquire(principal: Principal): (() => void) | Promise<() => void>
  /** Slots this machine holds for the key and for its organisation; for tests and health detail. */
  count(principal: Pick<Principal, 'organizationId' | 'keyPublicId'>): { key: number; org: number }
  /** Waits held on this machine across every key; for the metrics and the stop's drain. */
  total(): number
}

/** Slots held by this process, by `key:` and `org:` subject. */
class HeldHere {
  private readonly held = new Map<string, number>()

  get(slot: string): number {
    return this.held.get(slot) ?? 0
  }

  count(principal: Pick<Principal, 'organizationId' | 'keyPublicId'>): { key: number; org: number } {
    return { key: this.get(`key:${principal.keyPublicId}`), org: this.get(`org:${principal.organizationId}`) }
  }

  total(): number {
    let sum = 0
    for (const [slot, held] of this.held) if (slot.startsWith('key:')) sum += held
    return sum
  }

  /** Adds `by` to the principal's key and organisation slots. */
  bump(principal: Pick<Principal, 'organizationId' | 'keyPublicId'>, by: number): void {
    for (const slot of [`key:${principal.keyPublicId}`, `org:${principal.organizationId}`]) {
      const next = this.get(slot) + by
      if (next <= 0) this.held.delete(slot)
      else this.held.set(slot, next)
    }
  }
}

const tooMany = (principal: Principal) =>
  new DomainError(
    'long_poll_limit_exceeded',
    `Too many concurrent waits: at most ${principal.limits.longPollsPerKey} ` +
      `per key and ${principal.limits.longPollsPerOrg} per organization.`,
  )

export class LongPollSlots implements LongPollAdmission {
  private readonly held = new HeldHere()

  acquire(principal: Principal): () => void {
    const limits = principal.limits
    if (
      this.held.get(`key:${principal.keyPublicId}`) >= limits.longPollsPerKey ||
      this.held.get(`org:${principal.organizationId}`) >= limits.longPollsPerOrg
    )
      throw tooMany(principal)
    this.held.bump(principal, 1)
    let released = false
    return () => {
      if (released) return
      released = true
      this.held.bump(principal, -1)
    }
  }

  count(principal: Pick<Principal, 'organizationId' | 'keyPublicId'>): { key: number; org: number } {
    return this.held.count(principal)
  }

  total(): number {
    return this.held.total()
  }
}

/** Slots every machine counts (storage's slot leases in PostgreSQL mode). */
export interface SharedSlots {
  acquire(
    subjects: { id: string; limit: number }[],
  ): Promise<{ acquired: true; lease: { release(): Promise<void> } } | { acquired: false; full: string }>
}

/** The same limits over leases every machine sees. */
export class SharedLongPollSlots implements LongPollAdmission {
  private readonly held = new HeldHere()

  /** `releaseFailed` hears a release that could not reach storage: that lease runs out by itself. */
  constructor(
    private readonly slots: SharedSlots,
    private readonly releaseFailed: (error: unknown) => void,
  ) {}

  async acquire(principal: Principal): Promise<() => void> {
    const { limits } = principal
    const taken = await this.slots.acquire([
      { id: `key:${principal.keyPublicId}`, limit: limits.longPollsPerKey },
      { id: `org:${principal.organizationId}`, limit: limits.longPollsPerOrg },
    ])
    if (!taken.acquired) throw tooMany(principal)
    this.held.bump(principal, 1)
    let released = false
    return () => {
      if (released) return
      released = true
      this.held.bump(principal, -1)
      taken.lease.release().catch(this.releaseFailed)
    }
  }

  count(principal: Pick<Principal, 'organizationId' | 'keyPublicId'>): { key: number; org: number } {
    return this.held.count(principal)
  }

  total(): number {
    return this.held.total()
  }
}
