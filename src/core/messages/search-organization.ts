/**
 * Search across all of an organisation's active inboxes (the console's "Search all
 * inboxes"), with the API's list filters (subject substring, sender, sender domain,
 * received since) and the console's (recipient, text, has attachment, received until).
 * It walks `messages_by_organization_newest` and looks at the newest SEARCH_WINDOW
 * messages only (TEXT_SEARCH_WINDOW with a text or subject search), so a search costs the same
 * however much mail is kept, and it reads the lowercased search copies, never a body.
 */
import { and, desc, eq, gt, gte, inArray, lt, sql } from 'drizzle-orm'
import { isoTime } from '../../clock.ts'
import type { Db } from '../../storage/database.ts'
import { inboxes, messages } from '../../storage/schema.ts'
import type { Principal } from '../api-keys/authenticate.ts'
import type { CursorPosition } from '../cursor.ts'
import { cutPage, olderThan } from '../keyset.ts'
import type { MessageSummary } from '../models.ts'
import type { Services } from '../services.ts'
import type { MessageQuery } from './list-messages.ts'
import { presentSummary, summaryColumns } from './present.ts'
import { hasAttachment, recipientContains, TEXT_SEARCH_WINDOW, textContains } from './search-filters.ts'

/** How many of the organisation's newest messages a search looks through. */
export const SEARCH_WINDOW = 5000

export type SearchQuery = Pick<MessageQuery, 'subject' | 'sender' | 'senderDomain' | 'receivedAfter' | 'receivedBefore' | 'text' | 'hasAttachment' | 'recipient'>

/**
 * How many of the newest messages a query looks through: fewer when it searches text or
 * the subject, whose instr() is the costly comparison (a subject is up to 1,000
 * characters; over 5,000 of them a 200-byte subject query held the event loop for
 * 40–90 ms of CPU, over 1,000 a fifth of that).
 */
export const searchWindow = (query: SearchQuery) => (query.text || query.subject ? TEXT_SEARCH_WINDOW : SEARCH_WINDOW)

/** The query (exported so a test can check its plan); `after` is the last row of the previous page. */
export function searchQuery(db: Db, organizationId: string, query: SearchQuery, now: number, limit: number, after?: CursorPosition) {
  const newest = db
    .select({ id: messages.id })
    .from(messages)
    .where(and(eq(messages.organizationId, organizationId), gt(messages.expiresAt, isoTime(now))))
    .orderBy(desc(messages.receivedAt), desc(messages.id))
    .limit(searchWindow(query))
  const active = db
    .select({ id: inboxes.id })
    .from(inboxes)
    .where(and(eq(inboxes.organizationId, organizationId), eq(inboxes.state, 'active')))
  return db
    .select(summaryColumns)
    .from(messages)
    .where(
      and(
        inArray(messages.id, newest),
        inArray(messages.inboxId, active),
        query.subject ? sql`instr(${messages.searchSubject}, ${query.subject.toLowerCase()}) > 0` : undefined,
        query.sender ? eq(messages.searchSender, query.sender.toLowerCase()) : undefined,
        query.senderDomain ? eq(messages.searchSenderDomain, query.senderDomain.toLowerCase()) : undefined,
        query.receivedAfter !== undefined ? gte(messages.receivedAt, isoTime(query.receivedAfter)) : undefined,
        query.receivedBefore !== undefined ? lt(messages.receivedAt, isoTime(query.receivedBefore)) : undefined,
        query.recipient ? recipientContains(query.recipient.toLowerCase()) : undefined,
        query.text ? textContains(query.text) : undefined,
        query.hasAttachment ? hasAttachment() : undefined,
        after ? olderThan({ at: messages.receivedAt, id: messages.id }, after) : undefined,
      ),
    )
    .orderBy(desc(messages.receivedAt), desc(messages.id))
    .limit(limit)
}

/**
 * A page of matches, newest first, and the cursor of the next (signed for this
 * organisation's search). Later pages stay within the window of the newest messages,
 * which moves as mail arrives: a page is never older than the window of its own read.
 */
export function searchOrganization(s: Services, principal: Principal, query: SearchQuery & { cursor?: string }, limit: number): { data: MessageSummary[]; next_cursor: string | null } {
  const listing = `search:${principal.organizationId}`
  const after = query.cursor === undefined ? undefined : s.cursors.decode(listing, query.cursor)
  const rows = searchQuery(s.storage.db, principal.organizationId, query, s.clock.now(), limit + 1, after).all()
  const page = cutPage(rows, limit, (last) => s.cursors.encode(listing, { at: last.receivedAt, id: last.id }))
  return { data: page.rows.map(presentSummary), next_cursor: page.nextCursor }
}
