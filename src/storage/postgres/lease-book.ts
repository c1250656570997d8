/**
 * The book of one machine's leases of one kind (slots, quota reservations, idempotency
 * claims): which are in use, and which must still be given back.
 *
 * - Only what is in use is renewed: the heartbeat renews the leases held now (every third of
 *   the lease, so a lease outlasts two missed beats), never "every row of this machine". A
 *   row whose release failed is therefore not kept alive by its own machine.
 * - A release that fails (the database away, a statement cut short) is retried every
 *   `retryMs` until the database answers, so a request that ended during an outage frees its
 *   lease within a retry of the database coming back, not when its lease runs out (or never,
 *   while its machine lives). An acquisition whose outcome is unknown (the connection dropped
 *   around the commit) is given back the same way: deleting a row that was never written is
 *   harmless.
 * A machine that dies stops both timers, and its leases run out by themselves.
 */
export interface LeaseBook<T> {
  /** In use from now: renewed by the heartbeat until released or forgotten. */
  hold(id: string, item: T): void
  /** No longer in use and nothing to give back (refused, or converted by another statement). */
  forget(id: string): void
  /**
   * Gives it back now. On failure it is retried in the background until the database
   * answers, and the returned promise still rejects with the first failure (for the caller's log).
   */
  release(id: string, item: T): Promise<void>
  /** Gives it back in the background (an acquisition whose outcome is unknown). */
  orphan(id: string, item: T): void
  /** Leases in use, and releases waiting for a retry (tests, metrics). */
  readonly held: number
  readonly pending: number
  /** Renews every `leaseMs / 3` until `stop()`; calling it twice starts one timer. */
  start(): void
  stop(): void
  /** One beat now (tests; the timer calls it). */
  renew(): Promise<void>
}

export interface LeaseBookOptions<T> {
  leaseMs: number
  /** How often a failed release is tried again; 1 s by default. */
  retryMs?: number
  /** Extends the given leases (never empty). */
  renew(items: Map<string, T>): Promise<void>
  /** Deletes the given leases (never empty); deleting one already gone is harmless. */
  release(items: Map<string, T>): Promise<void>
}

export function createLeaseBook<T>(options: LeaseBookOptions<T>): LeaseBook<T> {
  const retryMs = options.retryMs ?? 1_000
  const live = new Map<string, T>()
  const owed = new Map<string, T>()
  let beat: ReturnType<typeof setInterval> | undefined
  let retry: ReturnType<typeof setTimeout> | undefined
  let retrying = false
  let stopped = false

  const renew = async () => {
    if (live.size > 0) await options.renew(new Map(live))
  }

  const scheduleRetry = () => {
    if (retry || retrying || stopped || owed.size === 0) return
    retry = setTimeout(retryOwed, retryMs)
    retry.unref?.()
  }
  const retryOwed = async () => {
    retry = undefined
    if (owed.size === 0) return
    retrying = true
    const batch = new Map(owed)
    try {
      await options.release(batch)
      for (const id of batch.keys()) owed.delete(id)
    } catch {
      // Still away: the next try follows; nothing is logged per try (storage health says it once).
    } finally {
      retrying = false
      scheduleRetry()
    }
  }
  const owe = (id: string, item: T) => {
    live.delete(id)
    owed.set(id, item)
    scheduleRetry()
  }

  return {
    hold(id, item) {
      live.set(id, item)
    },
    forget(id) {
      live.delete(id)
    },
    async release(id, item) {
      live.delete(id)
      try {
        await options.release(new Map([[id, item]]))
      } catch (error) {
        owe(id, item)
        throw error
      }
    },
    orphan: owe,
    get held() {
      return live.size
    },
    get pending() {
      return owed.size
    },
    start() {
      stopped = false
      scheduleRetry()
      if (beat) return
      beat = setInterval(() => {
        // A failed renewal is retried on the next beat; the lease outlasts two missed beats.
        renew().catch(() => {})
      }, options.leaseMs / 3)
      beat.unref?.()
    },
    stop() {
      stopped = true
      clearInterval(beat)
      clearTimeout(retry)
      beat = retry = undefined
    },
    renew,
  }
}
