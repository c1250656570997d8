/**
 * listOrWaitForMessages, the non-waiting part: one query with the filters ANDed, newest
 * first, keyset-paged on (received_at, id). Expired messages are invisible even before
 * the sweeper removes them.
 */
import { and, desc, eq, gt, gte, lt, or, sql } from 'drizzle-orm'
import { isoTime } from '../../clock.ts'
import type { Db } from '../../storage/database.ts'
import { messages } from '../../storage/schema.ts'
import type { CursorCodec } from '../cursor.ts'
import { DomainError } from '../errors.ts'
import type { Message, MessageSummary } from '../models.ts'
import { presentFull, presentSummary, summaryColumns } from './present.ts'

export interface MessageQuery {
  limit: number
  cursor?: string
  subject?: string
  sender?: string
  senderDomain?: string
  /** Epoch ms; only messages received at or after it. */
  receivedAfter?: number
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

export function queryMessages(db: Db, cursors: CursorCodec, filesUrl: string, now: number, inboxId: string, query: MessageQuery): MessagePage {
  const listing = `messages:${inboxId}`
  const after = query.cursor === undefined ? undefined : cursors.decode(listing, query.cursor)
  const where = and(
    eq(messages.inboxId, inboxId),
    gt(messages.expiresAt, isoTime(now)),
    query.subject ? sql`instr(${messages.searchSubject}, ${query.subject.toLowerCase()}) > 0` : undefined,
    query.sender ? eq(messages.searchSender, query.sender.toLowerCase()) : undefined,
    query.senderDomain ? eq(messages.searchSenderDomain, query.senderDomain.toLowerCase()) : undefined,
    query.receivedAfter !== undefined ? gte(messages.receivedAt, isoTime(query.receivedAfter)) : undefined,
    after ? or(lt(messages.receivedAt, after.at), and(eq(messages.receivedAt, after.at), lt(messages.id, after.id))) : undefined,
  )
  const order = [desc(messages.receivedAt), desc(messages.id)]
  const rows = query.includeContent
    ? db.select().from(messages).where(where).orderBy(...order).limit(query.limit + 1).all()
    : db.select(summaryColumns).from(messages).where(where).orderBy(...order).limit(query.limit + 1).all()
  const page = rows.slice(0, query.limit)
  const last = page.at(-1)
  return {
    data: query.includeContent ? presentFull(db, page as Array<typeof messages.$inferSelect>, filesUrl) : page.map(presentSummary),
    next_cursor: rows.length > query.limit && last ? cursors.encode(listing, { at: last.receivedAt, id: last.id }) : null,
  }
}
