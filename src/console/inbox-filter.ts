/**
 * The viewer's filter form, read from the URL into a message query: the API's own list
 * filters (subject contains, from an address or `@domain`, received since) and the
 * console's (recipient, text, has attachment, received until), ANDed. One inbox's page
 * and the search across inboxes share it; the URL carries every value, so a link to a
 * search works and paging keeps the filters.
 *
 * Values are checked, never silently cut: a value too long, with control characters, a
 * date that is not one or a range that ends before it starts is a message on the page.
 * Wildcards mean nothing here (the queries use instr(), not LIKE): `%` finds a `%`.
 */
import { foldForSearch } from '../core/inbound/search-text.ts'
import { parseFilterTime } from '../core/messages/filter-time.ts'
import type { MessageQuery } from '../core/messages/list-messages.ts'
import { DEFAULT_PAGE_SIZE, PAGE_SIZES } from '../core/messages/console-listing.ts'
import { parseSearchLine, SearchLineError } from '../core/messages/search-line.ts'
import type { SearchLineFilters } from '../core/messages/search-line.ts'

export interface InboxFilter {
  subject: string
  from: string
  /** The recipient; offered by the search across inboxes (in one inbox it is the inbox's address). */
  to: string
  text: string
  /** 'yes' when only messages with an attachment are wanted, else ''. */
  attachment: string
  since: string
  until: string
  /** The search line (core/messages/search-line.ts), ANDed with the fields above. */
  q: string
  cursor: string
  /** A Newer cursor (one inbox's list only). */
  before: string
  /** The page size asked for ('' for the default); not a filter. */
  size: string
}

export const emptyFilter: InboxFilter = {
  subject: '',
  from: '',
  to: '',
  text: '',
  attachment: '',
  since: '',
  until: '',
  q: '',
  cursor: '',
  before: '',
  size: '',
}

/** The longest value each field takes (the form's maxlength; the URL is checked against it too). */
export const FILTER_LIMITS = { subject: 200, from: 320, to: 320, text: 100, since: 40, until: 40 } as const

/**
 * The most UTF-8 bytes the searched-for values take. instr() compares up to the query's
 * bytes at each position of each stored subject or text, so a query of three-byte
 * letters (most non-Latin scripts) within the character limit tripled the worst search;
 * in bytes, no query costs more than the ASCII one the limits were measured with.
 */
const FILTER_BYTE_LIMITS = { subject: FILTER_LIMITS.subject, text: FILTER_LIMITS.text } as const

const utf8Bytes = (value: string) => Buffer.byteLength(value, 'utf8')

const tooManyBytes = (field: keyof typeof FILTER_BYTE_LIMITS) =>
  `${LABELS[field]}: at most ${FILTER_BYTE_LIMITS[field]} bytes of UTF-8 (a letter outside ASCII takes two to four).`

/** The URL's parameters, in this order. */
const FIELDS = ['q', 'subject', 'from', 'to', 'text', 'attachment', 'since', 'until'] as const

/** The fields of the form below the search line; when one is set, the form shows them open. */
export const usesFormFields = (f: InboxFilter) => FIELDS.some((field) => field !== 'q' && f[field] !== '')

/** What is echoed back into the form is cut here, so a huge value cannot bloat the page (it is refused anyway). */
const ECHOED = 1000

export function readInboxFilter(url: URL): InboxFilter {
  const filter = {
    ...emptyFilter,
    cursor: url.searchParams.get('cursor') ?? '',
    before: url.searchParams.get('before') ?? '',
    size: (url.searchParams.get('size') ?? '').slice(0, 10),
  }
  for (const field of FIELDS) filter[field] = (url.searchParams.get(field) ?? '').trim().slice(0, ECHOED)
  return filter
}

export const isFiltered = (f: InboxFilter) => FIELDS.some((field) => f[field] !== '')

const LABELS = {
  subject: 'Subject contains',
  from: 'From',
  to: 'To',
  text: 'Text contains',
  since: 'Received since',
  until: 'Received until',
} as const

const DATE_HELP = 'a date (2026-11-25), or a date and time in UTC (2026-11-25 14:30 or 2026-11-25 14:30:05)'

// C0 and C1 controls, DEL, and the invisible format characters that make a value look like another.
const CONTROL = /[\p{Cc}\p{Cf}]/u

/** The search line's terms, or where it cannot be read (a 400 on the page). */
export function readSearchLine(f: InboxFilter): { line?: SearchLineFilters } | { error: string } {
  try {
    return { line: f.q ? parseSearchLine(f.q) : undefined }
  } catch (error) {
    if (error instanceof SearchLineError) return { error: error.message }
    throw error
  }
}

/** The page size asked for: one of PAGE_SIZES, or the default when none is given. */
export function readPageSize(f: InboxFilter): number | { error: string } {
  if (f.size === '') return DEFAULT_PAGE_SIZE
  const size = Number(f.size)
  return (PAGE_SIZES as readonly number[]).includes(size)
    ? size
    : { error: `Page size: ${PAGE_SIZES.join(', ')} messages a page.` }
}

/** The query for the list or search verbs, or the reason the form's values cannot be used. */
export function toMessageQuery(f: InboxFilter, limit: number): MessageQuery | { error: string } {
  for (const field of ['subject', 'from', 'to', 'text', 'since', 'until'] as const) {
    if (f[field].length > FILTER_LIMITS[field])
      return { error: `${LABELS[field]}: at most ${FILTER_LIMITS[field]} characters.` }
    if (CONTROL.test(f[field])) return { error: `${LABELS[field]}: control characters cannot be searched for.` }
  }
  const query: MessageQuery = { limit, includeContent: false }
  if (f.cursor) query.cursor = f.cursor
  if (f.subject) {
    if (utf8Bytes(f.subject.toLowerCase()) > FILTER_BYTE_LIMITS.subject) return { error: tooManyBytes('subject') }
    query.subject = f.subject
  }
  if (f.from) {
    const domain = f.from.startsWith('@') ? f.from.slice(1) : f.from.includes('@') ? null : f.from
    if (domain !== null) {
      if (!/^[^\s@]+$/.test(domain)) return { error: 'From: an address (a@b.example) or a domain (@b.example).' }
      query.senderDomain = domain
    } else {
      if (!/^[^\s@]+@[^\s@]+$/.test(f.from))
        return { error: 'From: an address (a@b.example) or a domain (@b.example).' }
      query.sender = f.from
    }
  }
  if (f.to) query.recipient = f.to
  if (f.text) {
    const folded = foldForSearch(f.text)
    if (folded.trim() === '') return { error: 'Text contains: some text to look for.' }
    // The folded query is what is compared (İ lowercases to two characters).
    if (utf8Bytes(folded) > FILTER_BYTE_LIMITS.text) return { error: tooManyBytes('text') }
    query.text = folded
  }
  if (f.attachment) {
    if (f.attachment !== 'yes') return { error: 'Has attachment: tick the box, or leave it empty for any message.' }
    query.hasAttachment = true
  }
  if (f.since) {
    const at = parseFilterTime(f.since, false)
    if (at === null) return { error: `Received since: ${DATE_HELP}.` }
    query.receivedAfter = at
  }
  if (f.until) {
    const before = parseFilterTime(f.until, true)
    if (before === null) return { error: `Received until: ${DATE_HELP}.` }
    if (query.receivedAfter !== undefined && before <= query.receivedAfter)
      return { error: 'Received until is before received since: nothing can match.' }
    query.receivedBefore = before
  }
  return query
}

/** The page's URL with these filters (and page size) and another cursor (or none); `before` is a Newer cursor. */
export function filterHref(path: string, f: InboxFilter, cursor?: string, before?: string): string {
  const query = new URLSearchParams()
  for (const field of FIELDS) if (f[field]) query.set(field, f[field])
  if (f.size) query.set('size', f.size)
  if (cursor) query.set('cursor', cursor)
  if (before) query.set('before', before)
  const text = query.toString()
  return text ? `${path}?${text}` : path
}
