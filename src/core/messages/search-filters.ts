/**
 * The bounds of the console's text search, shared by one inbox's list (list-messages.ts), the
 * search across an organisation's inboxes (search-organization.ts) and the pages that explain
 * them. The filters themselves are SQL in each storage adapter.
 */

/**
 * A text search looks through this many of the newest messages (of the inbox, or of the
 * organisation): each costs a substring test over up to TEXT_SEARCH_CHARS characters, so the
 * window, not the amount of mail kept, bounds the work.
 */
export const TEXT_SEARCH_WINDOW = 1000
