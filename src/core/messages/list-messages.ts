/**
 * listOrWaitForMessages, the non-waiting part: one query with the filters ANDed, newest
 * first, keyset-paged on (received_at, id). Expired messages are invisible even before
 * the sweeper removes them.
 */
import { and, desc, eq, gt, gte, inArray, lt, sql } from 'drizzle-orm'
import { isoTime } from '../../clock.ts'
import type { Db } from '../../storage/database.ts'
import { preparedPerDatabase } from '../../storage/prepared.ts'
import { messages } from '../../storage/schema.ts'
import type { CursorCodec } from '../cursor.ts'
import { DomainError } from '../errors.ts'
import { cutPage, newestFirst, olderThan } from '../keyset.ts'
import type { Message, MessageSummary } from '../models.ts'
import type { Services } from '../services.ts'
import { presentFull, presentSummary, summaryColumns } from './present.ts'
import { hasAttachment, recipientContains, TEXT_SEARCH_WINDOW, textContains } from './search-filters.ts'

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
  /** Console only: subject or text contains this, lowercased and folded (search-filters.ts); within the newest TEXT_SEARCH_WINDOW. */
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
  if (query.includeContent && query.limit !== 1) throw new DomainError('invalid_include', 'include=content requires limit=1.')
}

/**
 * Parses RFC 3339 strictly (calendar-valid, with offset); null when it is not. A leap
 * second (:60) is grammatical RFC 3339 but Date.parse refuses it, so the instant is built
 * from its parts: :60 lands on the first instant after :59.999, which keeps "at or after".
 */
export function parseRfc3339(value: string): number | null {
  const match = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/.exec(value)
  if (!match) return null
  const [y, mo, d, h, mi, sec] = match.slice(1, 7).map(Number) as [number, number, number, number, number, number]
  const day = new Date(Date.UTC(2000, mo - 1, d)) // 2000 is a leap year: Feb 29 survives until the real year is set
  day.setUTCFullYear(y)
  if (day.getUTCFullYear() !== y || day.getUTCMonth() !== mo - 1 || day.getUTCDate() !== d || h > 23 || mi > 59 || sec > 60) return null
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

/** Which optional parts a query has; each combination gets its own prepared statement. */
type QueryShape = Pick<MessageQuery, 'includeContent'> & Record<'cursor' | 'subject' | 'sender' | 'senderDomain' | 'receivedAfter' | 'receivedBefore' | 'text' | 'hasAttachment' | 'recipient', boolean>

const p = sql.placeholder
const keyset = { at: messages.receivedAt, id: messages.id }

/** The WHERE of one query shape; parameters are placeholders filled at each run. */
function whereFor(db: Db, shape: QueryShape) {
  // A text search looks at the inbox's newest TEXT_SEARCH_WINDOW messages only.
  const textWindow = db
    .select({ id: messages.id })
    .from(messages)
    .where(and(eq(messages.inboxId, p('inboxId')), gt(messages.expiresAt, p('now'))))
    .orderBy(desc(messages.receivedAt), desc(messages.id))
    .limit(TEXT_SEARCH_WINDOW)
  return and(
    eq(messages.inboxId, p('inboxId')),
    gt(messages.expiresAt, p('now')),
    shape.subject ? sql`instr(${messages.searchSubject}, ${p('subject')}) > 0` : undefined,
    shape.sender ? eq(messages.searchSender, p('sender')) : undefined,
    shape.senderDomain ? eq(messages.searchSenderDomain, p('senderDomain')) : undefined,
    shape.receivedAfter ? gte(messages.receivedAt, p('receivedAfter')) : undefined,
    shape.receivedBefore ? lt(messages.receivedAt, p('receivedBefore')) : undefined,
    shape.text ? and(inArray(messages.id, textWindow), textContains(p('text'))) : undefined,
    shape.hasAttachment ? hasAttachment() : undefined,
    shape.recipient ? recipientContains(p('recipient')) : undefined,
    shape.cursor ? olderThan(keyset, { at: p('afterAt'), id: p('afterId') }) : undefined,
  )
}

const summarySelect = (db: Db, shape: QueryShape) =>
  db
    .select(summaryColumns)
    .from(messages)
    .where(whereFor(db, shape))
    .orderBy(...newestFirst(keyset))
    .limit(p('limit'))

function buildQuery(db: Db, shape: QueryShape) {
  return shape.includeContent
    ? db
        .select()
        .from(messages)
        .where(whereFor(db, shape))
        .orderBy(...newestFirst(keyset))
        .limit(p('limit'))
        .prepare()
    : summarySelect(db, shape).prepare()
}

/** The SQL of a summary listing with these filters, so a test can check its plan. */
export const listQuerySql = (db: Db, filters: Partial<QueryShape>) =>
  summarySelect(db, {
    includeContent: false,
    cursor: false,
    subject: false,
    sender: false,
    senderDomain: false,
    receivedAfter: false,
    receivedBefore: false,
    text: false,
    hasAttachment: false,
    recipient: false,
    ...filters,
  }).toSQL()

/** Built once per shape and database: Drizzle's per-run SQL building was most of a list read's CPU. */
const queriesByShape = preparedPerDatabase(() => new Map<string, ReturnType<typeof buildQuery>>())

/** What a listing reads with: the database, the cursor codec and the FILES_URL of attachment links. */
type ListingServices = Pick<Services, 'storage' | 'cursors' | 'publicUrls'>

/** One listing of an inbox already known to be the caller's, as of `now`. */
interface Listing {
  inboxId: string
  query: MessageQuery
  now: number
}

export function queryMessages(s: ListingServices, listing: Listing): MessagePage {
  return queryMessagesWithExpiry(s, listing).page
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
export function queryMessagesWithExpiry(s: ListingServices, { inboxId, query, now }: Listing): { page: MessagePage; earliestExpiresAt: number } {
  const { db } = s.storage
  const { cursors } = s
  const listing = `messages:${inboxId}`
  const after = query.cursor === undefined ? undefined : cursors.decode(listing, query.cursor)
  const shape: QueryShape = {
    includeContent: query.includeContent,
    cursor: after !== undefined,
    subject: Boolean(query.subject),
    sender: Boolean(query.sender),
    senderDomain: Boolean(query.senderDomain),
    receivedAfter: query.receivedAfter !== undefined,
    receivedBefore: query.receivedBefore !== undefined,
    text: Boolean(query.text),
    hasAttachment: query.hasAttachment === true,
    recipient: Boolean(query.recipient),
  }
  const key = Object.values(shape).map(Number).join('')
  const cache = queriesByShape(db)
  let prepared = cache.get(key)
  if (!prepared) {
    prepared = buildQuery(db, shape)
    cache.set(key, prepared)
  }
  const rows = prepared.all({
    inboxId,
    now: isoTime(now),
    subject: query.subject?.toLowerCase(),
    sender: query.sender?.toLowerCase(),
    senderDomain: query.senderDomain?.toLowerCase(),
    receivedAfter: query.receivedAfter === undefined ? undefined : isoTime(query.receivedAfter),
    receivedBefore: query.receivedBefore === undefined ? undefined : isoTime(query.receivedBefore),
    text: query.text,
    recipient: query.recipient?.toLowerCase(),
    afterAt: after?.at,
    afterId: after?.id,
    limit: query.limit + 1,
  })
  const page = cutPage(rows, query.limit, (last) => cursors.encode(listing, { at: last.receivedAt, id: last.id }))
  return {
    page: {
      data: query.includeContent ? presentFull(db, page.rows as Array<typeof messages.$inferSelect>, s.publicUrls().filesUrl) : page.rows.map(presentSummary),
      next_cursor: page.nextCursor,
    },
    earliestExpiresAt: rows.reduce((earliest, row) => Math.min(earliest, Date.parse(row.expiresAt)), Number.POSITIVE_INFINITY),
  }
}
