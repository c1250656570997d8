/**
 * listOrWaitForMessages, the non-waiting part: one query with the filters ANDed, newest
 * first, keyset-paged on (received_at, id). Expired messages are invisible even before
 * the sweeper removes them.
 */
import { isoTime } from '../../clock.ts'
import type { InboxListing, MessageFilters } from '../../storage/port/messages.ts'
import type { CursorCodec } from '../common/cursor.ts'
import { DomainError } from '../common/errors.ts'
import { cutPage } from '../common/keyset.ts'
import type { Message, MessageSummary } from '../common/models.ts'
import type { Services } from '../common/services.ts'
import { presentFull, presentSummary } from './present.ts'
import { TEXT_SEARCH_WINDOW } from './search-filters.ts'

export interface MessageQuery {
  limit: number
  cursor?: string
  subject?: string
  sender?: string
  senderDomain?: string
  /** Epoch ms; only messages received at or after it. */
  receivedAfter?: number
  /** Epoch ms; only messages received before it (the console's "until", made exclusive). */
  receivedBefore?: number
  /**
   * Console only: subject or text contains this, lowercased and
   * folded (search-filters.ts); within the newest TEXT_SEARCH_WINDOW.
   */
  text?: string
  /** Console only: only messages with at least one attachment. */
  hasAttachment?: boolean
  /** Console only: the recipient (the receiving inbox's address, the viewer's To) contains this. */
  recipient?: string
  includeContent: boolean
}

export interface MessagePage {
  data: Array<MessageSummary | Message>
  next_cursor: string | null
}

/** Checks the rules a schema cannot express; the HTTP layer has already checked each value's shape. */
export function checkMessageQuery(query: MessageQuery): void {
  if (query.includeContent && query.limit !== 1)
    throw new DomainError('invalid_include', 'include=content requires limit=1.')
}

/**
 * Parses RFC 3339 strictly (calendar-valid, with offset); null when it is not. A leap
 * second (:60) is grammatical RFC 3339 but Date.parse refuses it, so the instant is built
 * from its parts: :60 lands on the first instant after :59.999, which keeps "at or after".
 */
export function parseRfc3339(value: string): number | null {
  const match =
    /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/.exec(value)
  if (!match) return null
  const [y, mo, d, h, mi, sec] = match.slice(1, 7).map(Number) as [number, number, number, number, number, number]
  const day = new Date(Date.UTC(2000, mo - 1, d)) // 2000 is a leap year: Feb 29 survives until the real year is set
  day.setUTCFullYear(y)
  if (
    day.getUTCFullYear() !== y ||
    day.getUTCMonth() !== mo - 1 ||
    day.getUTCDate() !== d ||
    h > 23 ||
    mi > 59 ||
    sec > 60
  )
    return null
  const offsetHours = match[9] === undefined ? 0 : Number(match[10])
  const offsetMinutes = match[9] === undefined ? 0 : Number(match[11])
  if (offsetHours > 23 || offsetMinutes > 59) return null
  const offset = (match[9] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMinutes) * 60_000
  const fraction = match[7] ?? ''
  const millis = Number(fraction.slice(0, 3).padEnd(3, '0'))
  // "at or after" an instant finer than our millisecond timestamps: round up.
  const roundUp = /[1-9]/.test(fraction.slice(3)) ? 1 : 0
  // Date.UTC maps years 0-99 to 1900-1999, hence setUTCFullYear on the day above.
  return day.getTime() + ((h * 60 + mi) * 60 + sec) * 1000 + millis - offset + roundUp
}

/** The instants both databases read as RFC 3339 (years 0001 to 9999). */
const EARLIEST = new Date(Date.UTC(2000, 0, 1)).setUTCFullYear(1) // Date.UTC would read year 1 as 1901
const LATEST = Date.UTC(9999, 11, 31, 23, 59, 59, 999)

/**
 * A filter's instant within what both databases read. An RFC 3339 year may be 0000, and
 * 9999-12-31T23:59:60Z is 10000-01-01: JavaScript writes those as -000001-... or +010000-...,
 * which PostgreSQL refuses (a 500) and SQLite compares as text (a wrong answer). No message
 * is received outside the range, so clamping keeps every answer: everything is after year
 * 0000, nothing after 9999.
 */
const storedTime = (ms: number): string => isoTime(Math.min(Math.max(ms, EARLIEST), LATEST))

/**
 * The query's filters as storage compares them: case-insensitive ones lowercased (the stored
 * search copies are lowercase), times as RFC 3339. `text` is already folded (search-filters).
 */
export const storedFilters = (query: Omit<Partial<MessageQuery>, 'limit' | 'includeContent'>): MessageFilters => ({
  subject: query.subject ? query.subject.toLowerCase() : undefined,
  sender: query.sender ? query.sender.toLowerCase() : undefined,
  senderDomain: query.senderDomain ? query.senderDomain.toLowerCase() : undefined,
  receivedAfter: query.receivedAfter === undefined ? undefined : storedTime(query.receivedAfter),
  receivedBefore: query.receivedBefore === undefined ? undefined : storedTime(query.receivedBefore),
  text: query.text || undefined,
  hasAttachment: query.hasAttachment === true ? true : undefined,
  recipient: query.recipient ? query.recipient.toLowerCase() : undefined,
})

/** What a listing reads with: the database, the cursor codec and the FILES_URL of attachment links. */
type ListingServices = Pick<Services, 'store' | 'cursors' | 'publicUrls'>

/** One listing of an inbox already known to be the caller's, as of `now`. */
interface Listing {
  inboxId: string
  query: MessageQuery
  now: number
}

export async function queryMessages(s: ListingServices, listing: Listing): Promise<MessagePage> {
  return (await queryMessagesWithExpiry(s, listing)).page
}

/** The cursor of a listing checked alone (a waiting request checks it before taking a slot). */
export function checkCursor(cursors: CursorCodec, inboxId: string, cursor: string | undefined): void {
  if (cursor !== undefined) cursors.decode(`messages:${inboxId}`, cursor)
}

/**
 * The page, plus the earliest `expires_at` among every row the query read, the look-ahead
 * row that decides `next_cursor` included: until then the same query gives the same answer
 * (unless the inbox changes), which is what a cached page needs to know.
 */
export async function queryMessagesWithExpiry(
  s: ListingServices,
  { inboxId, query, now }: Listing,
): Promise<{ page: MessagePage; earliestExpiresAt: number }> {
  const { cursors } = s
  const listing = `messages:${inboxId}`
  const after = query.cursor === undefined ? undefined : cursors.decode(listing, query.cursor)
  const read: InboxListing = {
    inboxId,
    now: isoTime(now),
    filters: storedFilters(query),
    textWindow: TEXT_SEARCH_WINDOW,
    after,
    limit: query.limit + 1,
  }
  const cursorAfter = (last: { receivedAt: string; id: string }) =>
    cursors.encode(listing, { at: last.receivedAt, id: last.id })
  if (query.includeContent) {
    const { rows, full } = await s.store.messages.listInboxWithContent(read, query.limit)
    const page = cutPage(rows, query.limit, cursorAfter)
    const filesUrl = s.publicUrls().filesUrl
    return {
      page: { data: full.map((row) => presentFull(row, filesUrl)), next_cursor: page.nextCursor },
      earliestExpiresAt: earliestExpiry(rows),
    }
  }
  const rows = await s.store.messages.listInbox(read)
  const page = cutPage(rows, query.limit, cursorAfter)
  return {
    page: { data: page.rows.map(presentSummary), next_cursor: page.nextCursor },
    earliestExpiresAt: earliestExpiry(rows),
  }
}

const earliestExpiry = (rows: Array<{ expiresAt: string }>) =>
  rows.reduce((earliest, row) => Math.min(earliest, Date.parse(row.expiresAt)), Number.POSITIVE_INFINITY)
