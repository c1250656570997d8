/**
 * The fallback that keeps "no lost wake-up" true in PostgreSQL mode. A wake-up travels as a
 * NOTIFY published after the commit (src/storage/postgres/wake-publisher.ts), and can be lost:
 * the storing machine dies between its commit and the publication, the publication fails, or
 * the LISTEN connection was down when it went out. So once every WAKE_RECHECK_MS the machine
 * reads, in one statement, the newest message (and the existence) of every inbox its listeners
 * watch, and tells the listeners of each inbox whose answer changed since the last reading.
 *
 * An inbox seen for the first time has no earlier reading to compare with: its listeners are
 * told once if it holds a message at all (a message may have been committed, unheard, after a
 * waiter's first query; a spurious wake costs that waiter one query), and not if it is empty,
 * since then nothing arrived. An inbox is told `inbox_deleted` when a reading finds gone what
 * the one before found. received_at strictly increases inside an inbox
 * (core/inbound/received-at.ts), so every stored message changes the reading.
 */

/** How often the watched inboxes are re-read. A lost wake-up costs at most this much latency. */
export const WAKE_RECHECK_MS = 1_000

export interface InboxReading {
  exists: boolean
  newest: string | null
}

export interface WakeFallbackParts {
  /** The inboxes someone on this machine listens to right now. */
  watched(): string[]
  /** One reading per inbox (newestPerInbox). */
  read(inboxIds: string[]): Promise<Map<string, InboxReading>>
  /** Tells the inbox's local listeners. */
  deliver(inboxId: string, event: 'message_stored' | 'inbox_deleted'): void
  /** A reading failed (the database is away: the LISTEN's return wakes everyone anyway). */
  onError(error: unknown): void
}

export interface WakeFallback {
  /** One re-check now (after any under way): reads, compares, delivers. Resolves when done. */
  recheck(): Promise<void>
  stop(): void
}

export function startWakeFallback(parts: WakeFallbackParts, intervalMs = WAKE_RECHECK_MS): WakeFallback {
  let readings = new Map<string, InboxReading>()

  const once = async () => {
    const watched = parts.watched()
    if (watched.length === 0) {
      readings = new Map()
      return
    }
    let now: Map<string, InboxReading>
    try {
      now = await parts.read(watched)
    } catch (error) {
      parts.onError(error)
      return
    }
    const next = new Map<string, InboxReading>()
    for (const inboxId of watched) {
      const reading = now.get(inboxId) ?? { exists: false, newest: null }
      next.set(inboxId, reading)
      const before = readings.get(inboxId)
      if (!reading.exists) {
        // Gone since the last reading. Never seen to exist, it is no inbox of ours to end.
        if (before?.exists) parts.deliver(inboxId, 'inbox_deleted')
        continue
      }
      if (before ? before.newest !== reading.newest || !before.exists : reading.newest !== null)
        parts.deliver(inboxId, 'message_stored')
    }
    // Inboxes no longer watched lose their reading: watched again later, they start afresh.
    readings = next
  }
  // One reading at a time; one asked for during another runs after it (so it sees the
  // inboxes watched by then). The timer skips a turn while a reading is still under way.
  let tail: Promise<void> | null = null
  const recheck = () => {
    const mine: Promise<void> = (tail ?? Promise.resolve())
      .then(once)
      .catch(parts.onError)
      .finally(() => {
        if (tail === mine) tail = null
      })
    tail = mine
    return mine
  }
  const timer = setInterval(() => {
    if (!tail) void recheck()
  }, intervalMs)
  timer.unref?.()
  return {
    recheck,
    stop: () => clearInterval(timer),
  }
}
