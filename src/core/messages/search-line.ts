/**
 * The console's one-line search: words and operators, as mail clients read them.
 *
 *   from:billing@shop.example   the exact sender address (with an @ inside)
 *   from:shop.example           the sender address contains it (also `from:@shop.example`)
 *   to:ci                       the recipient (the inbox's address) contains it
 *   subject:"order shipped"     the subject contains it
 *   has:attachment              at least one attachment proper (inline images do not count)
 *   is:unread  is:read          whether a console member has opened it
 *   after:2026-11-25            received at or after the start of that day (or minute, second)
 *   before:2026-11-25           received before the start of that day (or minute, second)
 *   larger:100k  smaller:2m     size in bytes, k (KiB) or m (MiB), strictly
 *   reset  "reset password"     other words and quoted phrases: the subject or text contains it
 *   -word  -from:x  -"a b"      a `-` in front negates a term
 *
 * Terms combine with AND. A line that cannot be read is refused with the character it went
 * wrong at, never read half: an unknown operator (quote it to search for the text: "re:"),
 * an unclosed quote, an operator without a value, a date or size that is not one. The bounds
 * of the filter form hold per term, and a line has at most MAX_TERMS terms, each a substring
 * test per message looked at, so the worst line costs a bounded multiple of the worst form.
 */
import { foldForSearch } from '../inbound/search-text.ts'
import type { MessageFilters } from '../../storage/port/messages.ts'
import { isoTime } from '../../clock.ts'
import { parseFilterTime } from './filter-time.ts'

/** What a line becomes: the storage port's filters, named for the transports above core. */
export type SearchLineFilters = MessageFilters

/** The longest line taken. */
export const MAX_LINE = 500
/** The most terms in a line. */
const MAX_TERMS = 12
/** UTF-8 bytes a subject term and a text term take at most (as the filter form's fields). */
const SUBJECT_BYTES = 200
const TEXT_BYTES = 100

const OPERATORS = ['from', 'to', 'subject', 'has', 'is', 'before', 'after', 'larger', 'smaller'] as const
type Operator = (typeof OPERATORS)[number]

/** A line that cannot be read: `at` is the 1-based character where the trouble starts. */
export class SearchLineError extends Error {
  constructor(
    readonly at: number,
    readonly reason: string,
  ) {
    super(`Search, at character ${at}: ${reason}`)
  }
}

/** One term as written: where it starts, whether negated, its operator (null for a word or phrase) and value. */
interface Term {
  at: number
  negated: boolean
  operator: Operator | null
  value: string
}

// C0 and C1 controls, DEL and invisible format characters (as the filter form refuses them).
const CONTROL = /[\p{Cc}\p{Cf}]/u

/** Splits the line into terms; throws SearchLineError. */
export function tokenize(line: string): Term[] {
  if (line.length > MAX_LINE) throw new SearchLineError(MAX_LINE + 1, `a search is at most ${MAX_LINE} characters.`)
  const control = CONTROL.exec(line)
  if (control) throw new SearchLineError(control.index + 1, 'control characters cannot be searched for.')
  const terms: Term[] = []
  let i = 0
  while (i < line.length) {
    if (/\s/.test(line[i]!)) {
      i++
      continue
    }
    const at = i + 1
    let negated = false
    if (line[i] === '-') {
      negated = true
      i++
      if (i >= line.length || /\s/.test(line[i]!))
        throw new SearchLineError(at, 'a "-" needs a term right after it (-from:x, -word).')
    }
    let operator: Operator | null = null
    const named = /^([A-Za-z]+):/.exec(line.slice(i))
    if (named) {
      const name = named[1]!.toLowerCase()
      if (!(OPERATORS as readonly string[]).includes(name)) {
        throw new SearchLineError(
          i + 1,
          `"${named[1]}:" is not an operator (${OPERATORS.map((o) => `${o}:`).join(' ')}); ` +
            'to search for the text, put it in quotes.',
        )
      }
      operator = name as Operator
      i += named[0].length
    }
    let value: string
    if (line[i] === '"') {
      const close = line.indexOf('"', i + 1)
      if (close < 0) throw new SearchLineError(i + 1, 'this quote is not closed.')
      value = line.slice(i + 1, close)
      i = close + 1
      if (i < line.length && !/\s/.test(line[i]!))
        throw new SearchLineError(i + 1, 'put a space after a closing quote.')
      if (value.trim() === '') throw new SearchLineError(at, 'empty quotes: put the text to look for between them.')
    } else {
      const start = i
      while (i < line.length && !/\s/.test(line[i]!)) i++
      value = line.slice(start, i)
      if (value.includes('"'))
        throw new SearchLineError(start + value.indexOf('"') + 1, 'a quote inside a word: quote the whole value ("…").')
    }
    if (operator && value === '')
      throw new SearchLineError(at, `${operator}: needs a value (${operator}:… with no space after the colon).`)
    terms.push({ at, negated, operator, value })
    if (terms.length > MAX_TERMS) throw new SearchLineError(at, `at most ${MAX_TERMS} terms in one search.`)
  }
  return terms
}

const SIZE_UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  k: 1024,
  kb: 1024,
  kib: 1024,
  m: 1024 * 1024,
  mb: 1024 * 1024,
  mib: 1024 * 1024,
}

/** One term as a filter (before negation); throws SearchLineError. */
function termFilter(term: Term): MessageFilters {
  const fail = (reason: string): never => {
    throw new SearchLineError(term.at, reason)
  }
  const { value } = term
  switch (term.operator) {
    case null: {
      const folded = foldForSearch(value).trim()
      if (Buffer.byteLength(folded, 'utf8') > TEXT_BYTES)
        fail(`a word or phrase is at most ${TEXT_BYTES} bytes of UTF-8.`)
      return { text: folded }
    }
    case 'subject':
      if (Buffer.byteLength(value.toLowerCase(), 'utf8') > SUBJECT_BYTES)
        fail(`subject: is at most ${SUBJECT_BYTES} bytes of UTF-8.`)
      return { subject: value.toLowerCase() }
    case 'from': {
      if (value.length > 320) fail('from: is at most 320 characters.')
      const lowered = value.toLowerCase()
      const inner = lowered.indexOf('@')
      if (inner > 0) {
        if (!/^[^\s@]+@[^\s@]+$/.test(lowered)) fail('from: an address (a@b.example), or part of one (shop.example).')
        return { sender: lowered }
      }
      const part = lowered.startsWith('@') ? lowered.slice(1) : lowered
      if (part === '' || part.includes('@')) fail('from: an address (a@b.example), or part of one (shop.example).')
      // "@shop.example" still means the domain: keep its @ so "xshop.example" does not match.
      return { senderContains: lowered }
    }
    case 'to':
      if (value.length > 320) fail('to: is at most 320 characters.')
      return { recipient: value.toLowerCase() }
    case 'has':
      if (!/^attachments?$/i.test(value)) fail('has: takes "attachment" (has:attachment).')
      return { hasAttachment: true }
    case 'is': {
      const state = value.toLowerCase()
      if (state !== 'unread' && state !== 'read') fail('is: takes "unread" or "read".')
      return { unread: state === 'unread' }
    }
    case 'before':
    case 'after': {
      const at = parseFilterTime(value, false)
      if (at === null)
        fail(
          `${term.operator}: a date (2026-11-25), or a date and time ` +
            `in UTC (2026-11-25T14:30, or quoted: "2026-11-25 14:30").`,
        )
      return term.operator === 'after' ? { receivedAfter: isoTime(at!) } : { receivedBefore: isoTime(at!) }
    }
    case 'larger':
    case 'smaller': {
      const size = /^(\d{1,10})(?:\.(\d{1,3}))?\s*([a-z]*)$/i.exec(value)
      const unit = size ? SIZE_UNITS[size[3]!.toLowerCase()] : undefined
      if (!size || unit === undefined) fail(`${term.operator}: a size: bytes (5000), k (100k) or m (2m).`)
      const bytes = Math.round(Number(`${size![1]}.${size![2] ?? '0'}`) * unit!)
      return term.operator === 'larger' ? { largerThan: bytes } : { smallerThan: bytes }
    }
  }
}

/**
 * The line as storage filters: every positive term in `all`, every negated one in `none`
 * (so a term may be given twice). An empty line is no filter. Throws SearchLineError.
 */
export function parseSearchLine(line: string): MessageFilters {
  const all: MessageFilters[] = []
  const none: MessageFilters[] = []
  for (const term of tokenize(line)) (term.negated ? none : all).push(termFilter(term))
  const filters: MessageFilters = {}
  if (all.length > 0) filters.all = all
  if (none.length > 0) filters.none = none
  return filters
}
