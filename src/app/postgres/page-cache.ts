/**
 * PostgreSQL mode's message page cache: one that never hits. The cache's freshness rests on
 * the inbox version this process bumps with every write; a commit on another machine bumps
 * nothing here, so a cached listing right after another machine's `250` would miss the
 * message. Every listing is therefore queried (reads of PostgreSQL are shared by all
 * machines; the cache only ever saved this process a query and a serialization).
 */
import { MessagePageCache } from '../../core/messages/page-cache.ts'

export class NeverHitPageCache extends MessagePageCache {
  override get(): string | undefined {
    return undefined
  }

  override set(): void {}
}
