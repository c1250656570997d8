/**
 * One machine's publication of "messages were stored into these inboxes", after their
 * commits and outside them (./wake-bus.ts says why). Publications coalesce: with nothing in
 * flight and none sent in the last WAKE_PUBLISH_INTERVAL_MS, the first inbox goes out at once
 * (a quiet machine's wake-up costs no added wait); otherwise inboxes gather until the one in
 * flight has answered and the interval has passed, and then go out together. Under load that
 * is one NOTIFY statement for many inboxes every few milliseconds, each short and flushing
 * nothing, instead of one per stored message inside its commit.
 *
 * A publication that fails (the database just went away) is dropped, not retried: the other
 * machines' waiters catch it by their fallback re-check within a second
 * (src/app/postgres/wake-fallback.ts) or when their LISTEN connection comes back.
 */

/** The shortest time between two publications of one machine. */
const WAKE_PUBLISH_INTERVAL_MS = 2

export interface WakePublisher {
  /** Queues `inboxId` for the next publication; call after its message committed. */
  publish(inboxId: string): void
  /** Resolves once everything queued so far has been sent (or has failed). */
  flush(): Promise<void>
  /** Publications sent so far (statements, not inboxes): for tests and the bench. */
  sent(): number
}

/** `send` publishes one batch (publishStored on the machine's pool); `onError` hears a batch that failed. */
export function createWakePublisher(
  send: (inboxIds: string[]) => Promise<void>,
  onError: (error: unknown, inboxes: number) => void,
  intervalMs = WAKE_PUBLISH_INTERVAL_MS,
): WakePublisher {
  let pending = new Set<string>()
  let timer: ReturnType<typeof setTimeout> | undefined
  let inFlight: Promise<void> | null = null
  let lastSentAt = Number.NEGATIVE_INFINITY
  let statements = 0
  const idle: (() => void)[] = []

  const go = () => {
    timer = undefined
    const batch = [...pending]
    pending = new Set()
    lastSentAt = performance.now()
    statements++
    inFlight = send(batch)
      .catch((error: unknown) => onError(error, batch.length))
      .finally(() => {
        inFlight = null
        if (pending.size > 0) schedule()
        else for (const resolve of idle.splice(0)) resolve()
      })
  }
  const schedule = () => {
    if (timer || inFlight || pending.size === 0) return
    const wait = lastSentAt + intervalMs - performance.now()
    if (wait <= 0) go()
    else timer = setTimeout(go, wait)
  }

  return {
    publish(inboxId) {
      pending.add(inboxId)
      schedule()
    },
    flush() {
      if (!inFlight && !timer && pending.size === 0) return Promise.resolve()
      return new Promise((resolve) => idle.push(resolve))
    },
    sent: () => statements,
  }
}
