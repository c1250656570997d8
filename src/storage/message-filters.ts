/**
 * The message filters (MessageFilters, ./port/messages.ts) as SQL conditions on `messages`,
 * written once for both dialects. What differs is given by each adapter: how a column
 * "contains" a needle (SQLite's instr(); PostgreSQL's strpos() on the escaped mail text), the
 * text search over the stored texts, and the false literal. Built per read with values bound:
 * the console's listings with search-line terms and the search across inboxes. The API's
 * inbox listing keeps its prepared statements per adapter (the hot path).
 */
import { type AnyColumn, and, eq, gt, gte, isNotNull, isNull, lt, type SQL, sql } from 'drizzle-orm'
import type { MessageFilters } from './port/messages.ts'

/** The columns the filters read, under the names both dialects' `messages` tables share. */
type FilteredColumns = Record<
  'searchSubject' | 'searchSender' | 'searchSenderDomain' | 'receivedAt' | 'toAddress' | 'readAt' | 'sizeBytes',
  AnyColumn
>

export interface FilterDialect {
  messages: FilteredColumns
  /** `column` contains `needle` as a plain substring (no wildcards). */
  contains(column: AnyColumn, needle: string): SQL
  /** The subject or one of the message's stored texts contains `folded`. */
  textContains(folded: string): SQL
  /** At least one attachment proper (an inline image of the HTML body does not count). */
  hasAttachment(): SQL
  /** The dialect's false, for `coalesce` (SQLite: 0). */
  falseValue: SQL
}

/**
 * Every filter of `f` as a condition, its `text` included; the caller bounds a read with a
 * text term to the inbox's text window (hasTextTerm).
 */
export function filterConditions(d: FilterDialect, f: MessageFilters): Array<SQL | undefined> {
  const m = d.messages
  return [
    f.subject ? d.contains(m.searchSubject, f.subject) : undefined,
    f.sender ? eq(m.searchSender, f.sender) : undefined,
    f.senderDomain ? eq(m.searchSenderDomain, f.senderDomain) : undefined,
    f.receivedAfter !== undefined ? gte(m.receivedAt, f.receivedAfter) : undefined,
    f.receivedBefore !== undefined ? lt(m.receivedAt, f.receivedBefore) : undefined,
    f.recipient ? d.contains(m.toAddress, f.recipient) : undefined,
    f.text ? d.textContains(f.text) : undefined,
    f.hasAttachment ? d.hasAttachment() : undefined,
    f.senderContains ? d.contains(m.searchSender, f.senderContains) : undefined,
    f.unread === undefined ? undefined : f.unread ? isNull(m.readAt) : isNotNull(m.readAt),
    f.largerThan !== undefined ? gt(m.sizeBytes, f.largerThan) : undefined,
    f.smallerThan !== undefined ? lt(m.sizeBytes, f.smallerThan) : undefined,
    ...(f.all ?? []).map((term) => and(...filterConditions(d, term))),
    // coalesce: a term on a null column (read_at) is unknown, and "not unknown" would drop the row.
    ...(f.none ?? []).map((term) => sql`not coalesce(${and(...filterConditions(d, term))}, ${d.falseValue})`),
  ]
}
