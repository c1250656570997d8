/**
 * The timer that keeps one machine's leases alive: `renew` every third of the lease, so a
 * lease outlasts two missed beats, and a machine that dies stops renewing by itself.
 */
export interface Heartbeat {
  /** Renews every `leaseMs / 3` until `stop()`; calling it twice starts one timer. */
  start(): void
  stop(): void
}

export function leaseHeartbeat(leaseMs: number, renew: () => Promise<void>): Heartbeat {
  let timer: ReturnType<typeof setInterval> | undefined
  return {
    start() {
      if (timer) return
      timer = setInterval(() => {
        // A failed renewal is retried on the next beat; the lease outlasts two missed beats.
        renew().catch(() => {})
      }, leaseMs / 3)
      timer.unref?.()
    },
    stop() {
      clearInterval(timer)
      timer = undefined
    },
  }
}
