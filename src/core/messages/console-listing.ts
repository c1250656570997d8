/**
 * One inbox's messages as the console lists them: a page newest first with where it stands
 * ("51–100 of 300"), links both ways (Older, as the API's cursor; Newer, a cursor of its own),
 * and each row's read state and attachment mark. The read state is the console's alone: the
 * public Message has no such field and /v1 reads never set it.
 */
import { isoTime } from '../../clock.ts'
import { ID_PATTERNS } from '../../ids.ts'
import type { InboxListing, MessageFilters, MessagePosition } from '../../storage/port/messages.ts'
import type { Principal } from '../api-keys/authenticate.ts'
import type { MessageSummary } from '../common/models.ts'
import type { Services } from '../common/services.ts'
import { storedFilters, type MessageQuery } from './list-messages.ts'
import { presentSummary } from './present.ts'
import { TEXT_SEARCH_WINDOW } from './search-filters.ts'

/** The page sizes the console offers; the first of them is not the default (see DEFAULT_PAGE_SIZE). */
export const PAGE_SIZES = [25, 50, 100] as const
export const DEFAULT_PAGE_SIZE = 50
/** A count stops here ("of more than 10,000"): counting costs a walk over what it counts. */
export const COUNT_LIMIT = 10_000

type ListedMessage = MessageSummary & { read: boolean; has_attachment: boolean }

export interface ConsolePage {
  rows: ListedMessage[]
  /** How many match, up to COUNT_LIMIT + 1 (more than COUNT_LIMIT: say so). */
  total: number
  /** The 1-based position of the first row; 0 when the page is empty, null past the count's bound. */
  first: number | null
  older: string | null
  newer: string | null
  /** The inbox's unread messages when nothing filters the list and the count is whole; else null (ask inboxStats). */
  inboxUnread: number | null
}

export interface ConsoleListingInput {
  inboxId: string
  /** The filter form's query (its `cursor` is the Older cursor); its limit is the page size. */
  query: MessageQuery
  /** The search line's terms, ANDed with the form's. */
  line?: MessageFilters
  /** A Newer cursor (`before` in the URL), instead of the query's cursor. */
  before?: string
}

const olderListing = (inboxId: string) => `messages:${inboxId}`
const newerListing = (inboxId: string) => `messages-newer:${inboxId}`

/**
 * The page. The inbox is the caller's (checked by the route with
 * getInbox); a cursor of another listing is refused (invalid_cursor).
 */
export async function listForConsole(
  s: Services,
  principal: Principal,
  input: ConsoleListingInput,
): Promise<ConsolePage> {
  const { inboxId, query } = input
  const limit = query.limit
  const filters = storedFilters(query)
  if (input.line && (input.line.all || input.line.none)) filters.all = [input.line]
  const after: MessagePosition | undefined =
    input.before === undefined && query.cursor !== undefined
      ? s.cursors.decode(olderListing(inboxId), query.cursor)
      : undefined
  const before: MessagePosition | undefined =
    input.before === undefined ? undefined : s.cursors.decode(newerListing(inboxId), input.before)
  const base = { inboxId, now: isoTime(s.clock.now()), filters, textWindow: TEXT_SEARCH_WINDOW }
  const read: InboxListing = { ...base, after, before, limit: limit + 1 }
  let rows = await s.store.messages.listInbox(read)
  // One row more than the page tells whether the way we came goes on; it is the row furthest from the cursor.
  const more = rows.length > limit
  if (more) rows = before ? rows.slice(rows.length - limit) : rows.slice(0, limit)
  const firstRow = rows[0]
  const counted = await s.store.messages.countInbox(
    { ...base, limit: COUNT_LIMIT + 1 },
    firstRow ? { at: firstRow.receivedAt, id: firstRow.id } : undefined,
  )
  const marks = new Map(
    (await s.store.messages.marks({ organizationId: principal.organizationId, ids: rows.map((row) => row.id) })).map(
      (mark) => [mark.id, mark],
    ),
  )
  const lastRow = rows.at(-1)
  // Past the count's bound every counted row is newer than the page: its position is unknown.
  const beyondCount = counted.total > COUNT_LIMIT && counted.newer >= counted.total
  const olderExists =
    lastRow !== undefined &&
    (before ? beyondCount || counted.total > COUNT_LIMIT || counted.newer + rows.length < counted.total : more)
  return {
    rows: rows.map((row) => ({
      ...presentSummary(row),
      read: marks.get(row.id)?.read ?? false,
      has_attachment: marks.get(row.id)?.hasAttachment ?? false,
    })),
    total: counted.total,
    first: firstRow ? (beyondCount ? null : counted.newer + 1) : 0,
    older: olderExists ? s.cursors.encode(olderListing(inboxId), { at: lastRow.receivedAt, id: lastRow.id }) : null,
    newer:
      firstRow && counted.newer > 0
        ? s.cursors.encode(newerListing(inboxId), { at: firstRow.receivedAt, id: firstRow.id })
        : null,
    inboxUnread:
      Object.values(filters).every((value) => value === undefined) && counted.total <= COUNT_LIMIT
        ? Number(counted.unread)
        : null,
  }
}

/**
 * Of the ids a console form sent, those naming the organisation's unexpired messages in this
 * inbox, once each and in the order sent: one read of the summaries, so a bulk action over a
 * page costs one query, not a full read of every message. Anything else is left out silently,
 * as the action leaves another inbox's or organisation's messages alone.
 */
export async function messagesOfInbox(
  s: Services,
  principal: Principal,
  inboxId: string,
  ids: string[],
): Promise<string[]> {
  const wellFormed = [...new Set(ids)].filter((id) => ID_PATTERNS.msg.test(id))
  if (wellFormed.length === 0) return []
  const found = new Set(
    await s.store.messages.inInbox({
      organizationId: principal.organizationId,
      inboxId,
      ids: wellFormed,
      now: isoTime(s.clock.now()),
    }),
  )
  return wellFormed.filter((id) => found.has(id))
}

/**
 * Marks messages of the organisation read (or unread): opening a message in the console, or
 * the list's bulk action. Ids of another organisation are left alone. Answers how many changed.
 */
export async function markMessagesRead(
  s: Services,
  principal: Principal,
  ids: string[],
  read: boolean,
): Promise<number> {
  return s.store.messages.markRead({
    organizationId: principal.organizationId,
    ids,
    at: read ? isoTime(s.clock.now()) : null,
  })
}
