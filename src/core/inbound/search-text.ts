/**
 * The text the console's text search looks through (table message_search_texts): the
 * message's text part, or with none its HTML with the tags taken out, lowercased with
 * each run of white space as one space, cut at TEXT_SEARCH_CHARS characters. A search
 * compares against it with instr(), whose cost is this length times the query's, so
 * both are bounded (the query by the console's filter form, to 100 characters); the
 * worst pairing's cost is measured in docs/console.md.
 *
 * The subject is searched in its own lowercased copy (messages.search_subject), which
 * keeps its white space as sent: a folded header line leaves a tab, a template leaves
 * two spaces, and the folded query ("order shipped") would not find "Order\t shipped".
 * So when folding changes the subject, its folded form goes first in this text, ended by
 * a line feed: folding turns every line feed into a space, and the console refuses
 * control characters, so no query can match across the two.
 */
import { htmlToText } from './preview.ts'

export const TEXT_SEARCH_CHARS = 4000

/** Lowercase and one space per run of white space, the same for stored text and query. */
export const foldForSearch = (text: string) => text.toLowerCase().replace(/\s+/g, ' ')

export function searchTextOf(subject: string, text: string | null, html: string | null): string {
  const foldedSubject = foldForSearch(subject)
  const prefix = foldedSubject === subject.toLowerCase() ? '' : `${foldedSubject.trim()}\n`
  const source = text && text.trim() !== '' ? text : html ? htmlToText(html, 2 * TEXT_SEARCH_CHARS) : ''
  // Only the head is folded (twice the kept length, so collapsed white space still leaves
  // enough): a long body is never lowercased whole.
  const body = foldForSearch(source.slice(0, 2 * TEXT_SEARCH_CHARS))
    .trim()
    .slice(0, TEXT_SEARCH_CHARS)
  return (prefix + body).toWellFormed()
}
