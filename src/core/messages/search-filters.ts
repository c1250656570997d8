/**
 * The console's search filters that the API's list does not offer, as SQL conditions on
 * `messages`, shared by one inbox's list (list-messages.ts) and the search across an
 * organisation's inboxes (search-organization.ts).
 */
import { and, eq, sql, type SQL } from 'drizzle-orm'
import { attachments, messageSearchTexts, messages } from '../../storage/schema.ts'

/**
 * A text search looks through this many of the newest messages (of the inbox, or of the
 * organisation): each costs an instr() over up to TEXT_SEARCH_CHARS characters, so the
 * window, not the amount of mail kept, bounds the work.
 */
export const TEXT_SEARCH_WINDOW = 1000

/** Subject or text contains `folded` (already lowercased and folded by foldForSearch). */
export const textContains = (folded: unknown): SQL =>
  sql`(instr(${messages.searchSubject}, ${folded}) > 0 or exists (select 1 from ${messageSearchTexts} where ${messageSearchTexts.messageId} = ${messages.id} and instr(${messageSearchTexts.text}, ${folded}) > 0))`

/** At least one attachment proper (an inline image of the HTML body does not count); reads attachments_by_message. */
export const hasAttachment = (): SQL => sql`exists (select 1 from ${attachments} where ${and(eq(attachments.messageId, messages.id), eq(attachments.disposition, 'attachment'))})`

/** The envelope recipient (the receiving inbox's address, the viewer's To) contains `lowered`. */
export const recipientContains = (lowered: unknown): SQL => sql`instr(${messages.toAddress}, ${lowered}) > 0`
