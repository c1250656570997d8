/**
 * Which inboxes the other machines watch, as far as this machine has heard: so that it
 * publishes a stored message's wake-up only when some other machine has a listener waiting
 * on that inbox. Most mail has no waiter elsewhere when it commits (a test sends, then
 * polls, and the poll's first query finds it), and at low concurrency every publication is a
 * NOTIFY transaction of its own (nothing to coalesce with) that every machine's LISTEN
 * connection must also read: that cost is saved for the mail nobody waits for.
 *
 * Each machine announces, on the wake channel, the inboxes it starts watching and, every
 * WATCH_REFRESH_MS, every inbox it still watches. An announcement is kept for
 * WATCH_TTL_MS (three refreshes: one lost announcement does not stop the wake-ups).
 *
 * No lost wake-up, by construction rather than by ordering: a watcher announces before its
 * first query, but its announcement may reach this machine after this machine stored into
 * that inbox and decided nobody watched. So this machine remembers the inboxes it stored
 * into unpublished in the last WATCH_TTL_MS, and on hearing an announcement publishes those
 * it names at once: the watcher hears either its query's answer or that publication. An announcement
 * slower than WATCH_TTL_MS, or one missed while this machine's LISTEN connection was down,
 * is covered by "blind" time: after (re)connecting, this machine publishes everything for
 * WATCH_BLIND_MS (until every watcher's next refresh has been heard); beyond that, by the
 * watchers' own fallback re-check (wake-fallback.ts), as for any lost wake-up.
 *
 * An inbox watched only by long polls is announced "once": one publication wakes them all
 * and uses the announcement up, because a long poll answered by that wake-up is gone, and the
 * next poll announces itself again as it subscribes. A busy inbox's mail then costs one NOTIFY
 * per poll, not one per message. The stores after that publication are remembered as
 * unpublished, like any store nobody watched, so a poll that heard the wake-up but found
 * nothing it wanted (a filter) and waits on announces itself again (`waitingAgain`) and gets
 * them published at once. Listeners that stay for many events (the console's live views)
 * announce a lasting watch, which no publication uses up.
 */

/** How often a machine announces again every inbox it watches. */
export const WATCH_REFRESH_MS = 1_000
/** How long an announcement counts, and how long stores are remembered. */
export const WATCH_TTL_MS = 3 * WATCH_REFRESH_MS
/** How long after its LISTEN (re)starts a machine publishes everything: one refresh and a margin. */
export const WATCH_BLIND_MS = 1.5 * WATCH_REFRESH_MS

export interface RemoteWatches {
  /** This machine stored into `inboxId` at `now`: whether to publish its wake-up. */
  stored(inboxId: string, now: number): boolean
  /**
   * Another machine announced it watches `inboxIds` (`once`: until the next publication of
   * each): those of them to publish now (stored here lately).
   */
  heard(inboxIds: Iterable<string>, now: number, once?: boolean): string[]
  /** Whether a store into `inboxId` at `now` would be published (changes nothing): for tests. */
  publishes(inboxId: string, now: number): boolean
  /** Announcements may have been missed until `now` (LISTEN just (re)started): publish everything for a while. */
  blind(now: number): void
}

export function createRemoteWatches(ttlMs = WATCH_TTL_MS, blindMs = WATCH_BLIND_MS): RemoteWatches {
  // Until the first LISTEN: blind (nothing heard yet).
  let blindUntil = Number.POSITIVE_INFINITY
  const watchedUntil = new Map<string, number>()
  /** Watches a publication uses up (long polls'); also bounded by ttl. */
  const onceUntil = new Map<string, number>()
  const storedAt = new Map<string, number>()
  let prunedAt = Number.NEGATIVE_INFINITY

  // Both maps are bounded by what happened in the last ttl: swept at most once per ttl.
  const prune = (now: number) => {
    if (now - prunedAt < ttlMs) return
    prunedAt = now
    for (const [id, until] of watchedUntil) if (until <= now) watchedUntil.delete(id)
    for (const [id, until] of onceUntil) if (until <= now) onceUntil.delete(id)
    for (const [id, at] of storedAt) if (at + ttlMs <= now) storedAt.delete(id)
  }

  function publishes(inboxId: string, now: number): boolean {
    return (
      now < blindUntil ||
      (watchedUntil.get(inboxId) ?? Number.NEGATIVE_INFINITY) > now ||
      (onceUntil.get(inboxId) ?? Number.NEGATIVE_INFINITY) > now
    )
  }

  return {
    publishes,
    stored(inboxId, now) {
      prune(now)
      const publish = publishes(inboxId, now)
      // Only the stores not published wait for an announcement: a refresh repeats none.
      if (publish) {
        storedAt.delete(inboxId)
        onceUntil.delete(inboxId)
      } else storedAt.set(inboxId, now)
      return publish
    },
    heard(inboxIds, now, once = false) {
      prune(now)
      const publish: string[] = []
      for (const id of inboxIds) {
        if (!once) watchedUntil.set(id, now + ttlMs)
        const at = storedAt.get(id)
        storedAt.delete(id)
        if (at !== undefined && at + ttlMs > now) {
          publish.push(id)
          onceUntil.delete(id) // used up by this very publication
        } else if (once) onceUntil.set(id, now + ttlMs)
      }
      return publish
    },
    blind(now) {
      blindUntil = now + blindMs
    },
  }
}
