/** Inboxes and createInbox's idempotency records. See ../port.ts for the conventions every operation follows. */
// biome-ignore lint/suspicious/noEmptyInterface: filled in as core's verbs move onto the port
export interface InboxStore {}
