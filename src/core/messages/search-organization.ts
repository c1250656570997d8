/**
 * Search across all of an organisation's active inboxes (the console's "Search all
 * inboxes"), with the API's list filters (subject substring, sender, sender domain,
 * received since) and the console's (recipient, text, has attachment, received until).
 * It walks `messages_by_organization_newest` and looks at the newest SEARCH_WINDOW
 * messages only (TEXT_SEARCH_WINDOW with a text or subject search), so a search costs the same
 * however much mail is kept, and it reads the lowercased search copies, never a body.
 */
import { isoTime } from '../../clock.ts'
import type { Principal } from '../api-keys/authenticate.ts'
import { cutPage } from '../common/keyset.ts'
import type { MessageSummary } from '../common/models.ts'
import type { Services } from '../common/services.ts'
import { hasTextTerm, type MessageFilters } from '../../storage/port/messages.ts'
import { storedFilters, type MessageQuery } from './list-messages.ts'
import { presentSummary } from './present.ts'
import { TEXT_SEARCH_WINDOW } from './search-filters.ts'

/** How many of the organisation's newest messages a search looks through. */
export const SEARCH_WINDOW = 5000

export type SearchQuery = Pick<
  MessageQuery,
  'subject' | 'sender' | 'senderDomain' | 'receivedAfter' | 'receivedBefore' | 'text' | 'hasAttachment' | 'recipient'
> & {
  /** The console's search line (search-line.ts), ANDed with the rest. */
  line?: MessageFilters
}

/**
 * How many of the newest messages a query looks through: fewer when it searches text or
 * the subject, whose substring test is the costly comparison (a subject is up to 1,000
 * characters; over 5,000 of them a 200-byte subject query held the event loop for
 * 40–90 ms of CPU, over 1,000 a fifth of that).
 */
export const searchWindow = (query: SearchQuery) =>
  query.text || query.subject || (query.line && (hasTextTerm(query.line) || hasSubjectTerm(query.line)))
    ? TEXT_SEARCH_WINDOW
    : SEARCH_WINDOW

const hasSubjectTerm = (f: MessageFilters): boolean =>
  Boolean(f.subject) || [...(f.all ?? []), ...(f.none ?? [])].some(hasSubjectTerm)

/**
 * A page of matches, newest first, and the cursor of the next (signed for this
 * organisation's search). Later pages stay within the window of the newest messages,
 * which moves as mail arrives: a page is never older than the window of its own read.
 */
export async function searchOrganization(
  s: Services,
  principal: Principal,
  query: SearchQuery & { cursor?: string },
  limit: number,
): Promise<{ data: MessageSummary[]; next_cursor: string | null }> {
  const listing = `search:${principal.organizationId}`
  const after = query.cursor === undefined ? undefined : s.cursors.decode(listing, query.cursor)
  const rows = await s.store.messages.searchOrganization({
    organizationId: principal.organizationId,
    now: isoTime(s.clock.now()),
    filters: { ...storedFilters(query), all: query.line?.all || query.line?.none ? [query.line] : undefined },
    window: searchWindow(query),
    after,
    limit: limit + 1,
  })
  const page = cutPage(rows, limit, (last) => s.cursors.encode(listing, { at: last.receivedAt, id: last.id }))
  return { data: page.rows.map(presentSummary), next_cursor: page.nextCursor }
}
