/**
 * Chooses the kind of each forced collection the SMTP guards run as DATA flows: an eden
 * (young-generation) one, or a full one only once the process's resident memory has grown
 * by `growthBeforeFull` since the last full one.
 *
 * Why: under the big-mail flood a full collection (`Bun.gc(true)`) was the event loop's
 * longest recurring turn, 10 to 15 ms of main-thread CPU and 20 to 40 ms of wall time on a
 * quiet machine (it waits for JSC's marking threads, which share the cores with the parse
 * worker and the blob stager), against about 1.5 ms for an eden one. Every other one was
 * full, and RSS sat flat around 218 to 235 MiB throughout, each full one giving back the
 * 16 to 20 MiB the previous 32 MiB of DATA had left: most of those full collections were
 * taken with a lot of room left under the 384 MiB bound. Eden collections give no memory
 * back to the system, so RSS itself says when garbage that survived them has piled up
 * (chunks waiting for the spool outlive an eden collection; see
 * docs/internals/inbound-processing.md).
 */
export type CollectionKind = 'full' | 'eden'

export class CollectionPacer {
  /** RSS just after the last full collection, or lower since; null until the first one. */
  private rssAfterFull: number | null = null

  constructor(
    /** How far RSS may grow past its level after the last full collection before the next is full. */
    private readonly growthBeforeFull: number,
    /** The process's resident memory in bytes (injected so the rule is testable without a heap). */
    private readonly rss: () => number = () => process.memoryUsage.rss(),
  ) {}

  /** The kind of collection to run now. The first one is full, to take the baseline. */
  next(): CollectionKind {
    if (this.rssAfterFull === null) return 'full'
    const now = this.rss()
    // Growth counts from the lowest point since: memory given back in between (the allocator
    // returning pages once a burst is over) is not room to grow into.
    this.rssAfterFull = Math.min(this.rssAfterFull, now)
    return now - this.rssAfterFull >= this.growthBeforeFull ? 'full' : 'eden'
  }

  /** To call right after a full collection: RSS then is the new baseline. */
  fullDone(): void {
    this.rssAfterFull = this.rss()
  }
}
