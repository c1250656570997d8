/**
 * Reading and deleting stored messages, their sources and attachments;
 * usage. See ../port.ts for the conventions every operation follows.
 */
import type { AttachmentRow, MessageContentRow, MessageRow } from '../rows.ts'

/**
 * The columns a list summary needs, by name (both adapters select these: ../columns.ts);
 * content columns stay on disk unless asked for.
 */
export const SUMMARY_COLUMN_NAMES = [
  'id',
  'inboxId',
  'fromName',
  'fromAddress',
  'toAddress',
  'subject',
  'preview',
  'sizeBytes',
  'receivedAt',
  'expiresAt',
] as const satisfies ReadonlyArray<keyof MessageRow>
export type MessageSummaryRow = Pick<MessageRow, (typeof SUMMARY_COLUMN_NAMES)[number]>

/** A message with everything getMessage and include=content show: its content and its attachments in received order. */
export interface FullMessageRows {
  message: MessageRow
  content: MessageContentRow
  attachments: AttachmentRow[]
}

/** A keyset position: the (received_at, id) of the last row of the previous page. */
export interface MessagePosition {
  at: string
  id: string
}

/**
 * The filters of a listing or a search, ANDed; an absent one does not filter. Core has already
 * prepared each value (lowercased, folded for search); storage compares them as given.
 */
export interface MessageFilters {
  /** `search_subject` contains it (a plain substring: no wildcards). */
  subject?: string
  /** `search_sender` equals it. */
  sender?: string
  /** `search_sender_domain` equals it. */
  senderDomain?: string
  /** RFC 3339; received at or after it. */
  receivedAfter?: string
  /** RFC 3339; received before it. */
  receivedBefore?: string
  /**
   * `search_subject` or the message's `message_search_texts` row
   * contains it, within the newest `textWindow` messages of the inbox.
   */
  text?: string
  /** At least one attachment whose disposition is `attachment` (inline parts do not count). */
  hasAttachment?: boolean
  /** `to_address` contains it (a plain substring). */
  recipient?: string
  // The console's search line (core/messages/search-line.ts) adds the terms below. A listing
  // with any of them is built per read rather than from a prepared statement: the API's list
  // never has them, and its hot path stays as it was.
  /** Console only: `search_sender` contains it (a plain substring). */
  senderContains?: string
  /** Console only: true for unread messages only (`read_at` null), false for read ones only. */
  unread?: boolean
  /** Console only: `size_bytes` strictly greater than this. */
  largerThan?: number
  /** Console only: `size_bytes` strictly less than this. */
  smallerThan?: number
  /** Console only: each of these must match as well (a term given twice: `subject:a subject:b`). */
  all?: MessageFilters[]
  /** Console only: none of these may match (`-from:x`, `-"a phrase"`). */
  none?: MessageFilters[]
}

/** Whether the filters use a console-only term (see MessageFilters). */
export const hasConsoleTerms = (f: MessageFilters): boolean =>
  f.senderContains !== undefined ||
  f.unread !== undefined ||
  f.largerThan !== undefined ||
  f.smallerThan !== undefined ||
  (f.all?.length ?? 0) > 0 ||
  (f.none?.length ?? 0) > 0

/**
 * Whether a text term appears anywhere in the filters, negated ones included (each bounds the read to the text window).
 */
export const hasTextTerm = (f: MessageFilters): boolean =>
  Boolean(f.text) || (f.all ?? []).some(hasTextTerm) || (f.none ?? []).some(hasTextTerm)

/** One page of an inbox's listing, newest first by (received_at, id). */
export interface InboxListing {
  inboxId: string
  /** RFC 3339; messages with `expires_at` at or before it are invisible. */
  now: string
  filters: MessageFilters
  /** How many of the inbox's newest unexpired messages a `text` filter looks through. */
  textWindow: number
  /** Rows strictly older than this position; absent for the first page. */
  after?: MessagePosition
  /**
   * Console only (its "Newer" link): rows strictly newer than this position instead, the
   * `limit` nearest to it, still answered newest first. Not given with `after`.
   */
  before?: MessagePosition
  /** At most this many rows (core asks for one more than the page, to know whether another follows). */
  limit: number
}

/** One page of the search across an organisation's active inboxes, newest first by (received_at, id). */
export interface OrganizationSearch {
  organizationId: string
  now: string
  filters: MessageFilters
  /** Only the organisation's newest `window` unexpired messages are looked at (the text filter too). */
  window: number
  after?: MessagePosition
  limit: number
}

/** Names one message or attachment of an organisation, as of `now` (expired ones do not exist). */
export interface OwnedItem {
  organizationId: string
  id: string
  now: string
}

export interface MessageStore {
  /** The summaries of one page of an inbox's messages. */
  listInbox(listing: InboxListing): Promise<MessageSummaryRow[]>

  /**
   * The same page as message rows, and the first `contentOf` of them in full (include=content:
   * the look-ahead row that only decides `next_cursor` needs no content); read as one state of
   * the database.
   */
  listInboxWithContent(
    listing: InboxListing,
    contentOf: number,
  ): Promise<{ rows: MessageRow[]; full: FullMessageRows[] }>

  /** The organisation's unexpired message in full, or null (unknown, deleted, expired or another organisation's). */
  getFull(item: OwnedItem): Promise<FullMessageRows | null>

  /**
   * The raw source of the organisation's unexpired message and its SHA-256 (null
   * for rows stored before hashes), or null when there is no such message.
   */
  getSource(item: OwnedItem): Promise<{ raw: Buffer; sha256: string | null } | null>

  /**
   * Deletes the organisation's unexpired message with its content, source and attachments
   * (monthly usage is not touched). Answers the inbox it was in, or null when there was no
   * such message (nothing is written then).
   */
  delete(item: OwnedItem): Promise<{ inboxId: string } | null>

  /**
   * An attachment of the organisation whose message has not expired: its metadata,
   * bytes and SHA-256 (null for rows stored before hashes); null when there is none.
   */
  getAttachment(
    item: OwnedItem,
  ): Promise<{ filename: string; contentType: string; content: Buffer; sha256: string | null } | null>

  /** The search across the organisation's active inboxes. */
  searchOrganization(search: OrganizationSearch): Promise<MessageSummaryRow[]>

  /**
   * Console only: how many messages of the listing match (its `after` and `before` ignored),
   * counting the newest `limit` at most, and how many of those are strictly newer than
   * `newerThan` (the page's first row), so a page can say "51–100 of 300", and how many of
   * them are unread (the inbox's unread count when nothing filters). The bound keeps
   * a count of a huge inbox as cheap as a page of it.
   */
  countInbox(
    listing: Omit<InboxListing, 'after' | 'before'>,
    newerThan: MessagePosition | undefined,
  ): Promise<{ total: number; newer: number; unread: number }>

  /**
   * Console only: which of these ids are the organisation's unexpired messages in this inbox,
   * in one read of the summaries (the bulk action's check on ids the client sent).
   */
  inInbox(input: { organizationId: string; inboxId: string; ids: string[]; now: string }): Promise<string[]>

  /**
   * Console only: of these ids of the organisation, which are read
   * and which have an attachment proper (inline parts do not count).
   */
  marks(input: {
    organizationId: string
    ids: string[]
  }): Promise<Array<{ id: string; read: boolean; hasAttachment: boolean }>>

  /**
   * Console only: marks the organisation's listed messages read at `at` (those already read
   * keep their time), or unread when `at` is null. Answers how many rows it changed.
   */
  markRead(input: { organizationId: string; ids: string[]; at: string | null }): Promise<number>

  /** Console only: keeps a link check's result for its message (gone with the message). */
  saveLinkCheck(row: {
    id: string
    messageId: string
    organizationId: string
    createdAt: string
    resultsJson: string
  }): Promise<void>

  /** Console only: the organisation's link check with this id whose message is unexpired, or null. */
  getLinkCheck(
    item: OwnedItem,
  ): Promise<{ id: string; messageId: string; createdAt: string; resultsJson: string } | null>

  /** The organisation's active inboxes and the messages it stored in `month` ('YYYY-MM'), read together. */
  usage(input: { organizationId: string; month: string }): Promise<{ activeInboxes: number; emailsReceived: number }>
}
