/**
 * The inbox page's filter form, read into the API's own message query (the same filters
 * and indexes as `GET /v1/inboxes/{id}/messages`): subject contains, from (an address, or
 * `@domain`), received since (a date, or date and time, in UTC), and the page cursor.
 */
import { parseRfc3339, type MessageQuery } from '../core/messages/list-messages.ts'

export interface InboxFilter {
  subject: string
  from: string
  since: string
  cursor: string
}

export const readInboxFilter = (url: URL): InboxFilter => ({
  subject: (url.searchParams.get('subject') ?? '').trim().slice(0, 200),
  from: (url.searchParams.get('from') ?? '').trim().slice(0, 320),
  since: (url.searchParams.get('since') ?? '').trim().slice(0, 40),
  cursor: url.searchParams.get('cursor') ?? '',
})

export const isFiltered = (f: InboxFilter) => f.subject !== '' || f.from !== '' || f.since !== ''

/** The query for the API's list verb, or the reason the form's values cannot be used. */
export function toMessageQuery(f: InboxFilter, limit: number): MessageQuery | { error: string } {
  const query: MessageQuery = { limit, includeContent: false }
  if (f.cursor) query.cursor = f.cursor
  if (f.subject) query.subject = f.subject
  if (f.from) {
    const domain = f.from.startsWith('@') ? f.from.slice(1) : f.from.includes('@') ? null : f.from
    if (domain !== null) {
      if (!/^[^\s@]+$/.test(domain)) return { error: 'From: an address (a@b.example) or a domain (@b.example).' }
      query.senderDomain = domain
    } else {
      if (!/^[^\s@]+@[^\s@]+$/.test(f.from)) return { error: 'From: an address (a@b.example) or a domain (@b.example).' }
      query.sender = f.from
    }
  }
  if (f.since) {
    // A date alone is midnight; a time without an offset is UTC.
    let text = f.since.replace(' ', 'T')
    if (/^\d{4}-\d\d-\d\d$/.test(text)) text += 'T00:00:00'
    if (/T\d\d:\d\d$/.test(text)) text += ':00'
    if (!/(Z|[+-]\d\d:\d\d)$/i.test(text)) text += 'Z'
    const at = parseRfc3339(text)
    if (at === null) return { error: 'Received since: a date (2026-11-25) or a date and time in UTC (2026-11-25 14:30).' }
    query.receivedAfter = at
  }
  return query
}

/** The page's URL with these filters and another cursor (or none). */
export function filterHref(path: string, f: InboxFilter, cursor?: string): string {
  const query = new URLSearchParams()
  if (f.subject) query.set('subject', f.subject)
  if (f.from) query.set('from', f.from)
  if (f.since) query.set('since', f.since)
  if (cursor) query.set('cursor', cursor)
  const text = query.toString()
  return text ? `${path}?${text}` : path
}
