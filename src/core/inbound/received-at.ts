/**
 * `received_at` only moves forward inside an inbox. Lists are newest first by received_at,
 * `limit=1` means "the newest", and the README's "wait for the next message" pattern waits
 * with `received_after` = the previous message's received_at + 1 ms. Both break if the wall
 * clock steps back (an NTP correction, a VM resumed on another host): a message stored after
 * the step would sort below older ones and never satisfy the wait. They also break without a
 * step when two messages reach one inbox in the same millisecond (the second is invisible to
 * a wait for "after the first"). So a message's received_at is the clock's time, but at least
 * one millisecond after the newest message already in its inbox.
 */
export function monotonicReceivedAt(now: number, newestInInbox: string | undefined): number {
  if (newestInInbox === undefined) return now
  const newest = Date.parse(newestInInbox)
  return Number.isFinite(newest) && newest >= now ? newest + 1 : now
}
