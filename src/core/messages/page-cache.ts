/**
 * Serialized answers of non-waiting message listings (summaries), reused while nothing
 * that could change them has happened. Tests poll the same listing over and over; this
 * turns a repeat into a map lookup instead of a query plus serialization (list reads were
 * bound by the SQLite scan and the JSON encoding of 50 rows).
 *
 * An entry is valid only while all of these hold, so a hit is always the answer the
 * query would give now:
 * - the inbox's version is unchanged (bumped by every write to its messages: store,
 *   delete, retention, inbox deletion, no later than right after its commit). The version
 *   is read before the query, so a page whose query ran across a write's commit carries the
 *   older version and is dropped at its next use;
 * - the clock has not passed the earliest `expires_at` of the rows the query read (the
 *   page and the look-ahead row behind `next_cursor`: one of them would vanish) nor gone
 *   back before the entry was built (tests move clocks).
 * Older messages beyond the look-ahead row cannot change the answer by expiring: the page
 * holds the newest matches and `next_cursor` only says whether the look-ahead row exists.
 */
import type { Principal } from '../api-keys/authenticate.ts'
import { findActiveInbox } from '../inboxes/find-inbox.ts'
import type { Services } from '../common/services.ts'
import { queryMessagesWithExpiry, type MessageQuery } from './list-messages.ts'

interface CachedPage {
  version: number
  builtAt: number
  validUntil: number
  body: string
}

// About 8 MB of JSON text (counted in UTF-16 units): a few hundred full pages.
const MAX_CHARACTERS = 8 * 1024 * 1024

export class MessagePageCache {
  private readonly entries = new Map<string, CachedPage>()
  private characters = 0

  get(key: string, version: number, now: number): string | undefined {
    const entry = this.entries.get(key)
    if (!entry) return undefined
    if (entry.version !== version || now >= entry.validUntil || now < entry.builtAt) {
      this.remove(key, entry)
      return undefined
    }
    // Refresh its place in the insertion order, so eviction drops the least recently used.
    this.entries.delete(key)
    this.entries.set(key, entry)
    return entry.body
  }

  set(key: string, entry: CachedPage): void {
    const old = this.entries.get(key)
    if (old) this.remove(key, old)
    if (entry.body.length > MAX_CHARACTERS / 8) return // a page that big is not worth holding
    this.entries.set(key, entry)
    this.characters += entry.body.length
    for (const [oldest, value] of this.entries) {
      if (this.characters <= MAX_CHARACTERS) break
      this.remove(oldest, value)
    }
  }

  get size(): number {
    return this.entries.size
  }

  private remove(key: string, entry: CachedPage): void {
    this.entries.delete(key)
    this.characters -= entry.body.length
  }
}

/** Key of one listing: the inbox and every query value that shapes the answer. */
const keyOf = (inboxId: string, q: MessageQuery) =>
  // JSON, not a joined string: a value containing the separator must not collide with another query.
  JSON.stringify([
    inboxId,
    q.limit,
    q.cursor ?? null,
    q.subject?.toLowerCase() ?? null,
    q.sender?.toLowerCase() ?? null,
    q.senderDomain?.toLowerCase() ?? null,
    q.receivedAfter ?? null,
  ])

/**
 * listOrWaitForMessages with wait_seconds=0 and no include: the JSON text of the page,
 * from the cache (Services.messagePages) when still valid. Errors (unknown inbox, bad
 * cursor) are never cached.
 */
export async function listSummariesAsJson(
  s: Services,
  principal: Principal,
  input: { inboxId: string; query: MessageQuery },
): Promise<string> {
  const { query } = input
  const cache = s.messagePages
  const inbox = await findActiveInbox(s, principal, input.inboxId)
  const now = s.clock.now()
  const version = s.notifier.version(inbox.id)
  const key = keyOf(inbox.id, query)
  const cached = cache.get(key, version, now)
  if (cached !== undefined) return cached
  const { page, earliestExpiresAt } = await queryMessagesWithExpiry(s, { inboxId: inbox.id, query, now })
  const body = JSON.stringify(page)
  cache.set(key, { version, builtAt: now, validUntil: earliestExpiresAt, body })
  return body
}
