/**
 * The SQLite schema. People open this file with `sqlite3`, so names are plain English,
 * timestamps are RFC 3339 UTC text (sortable, readable) and every column says why it exists.
 * Change it here, then `bun run db:generate` to write a migration into drizzle/.
 */
import { blob, index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

/** Tenants. Every inbox, message and key belongs to exactly one. */
export const organizations = sqliteTable('organizations', {
  id: text('id').primaryKey(), // org_ + 32 hex
  name: text('name').notNull(), // operator's label, shown by `cli orgs list`
  createdAt: text('created_at').notNull(),
  // The organisation's own limits, set by the operator (console or `cli orgs limits`);
  // null means "follow the LIMIT_* variable", so changing the environment still moves it.
  limitActiveInboxes: integer('limit_active_inboxes'),
  limitMonthlyEmails: integer('limit_monthly_emails'),
  limitInboxBurst: integer('limit_inbox_burst'),
  limitOrgBurst: integer('limit_org_burst'),
  limitRequestsPerKey: integer('limit_requests_per_key'),
  limitRequestsPerOrg: integer('limit_requests_per_org'),
  limitLongPollsPerKey: integer('limit_long_polls_per_key'),
  limitLongPollsPerOrg: integer('limit_long_polls_per_org'),
})

/** API keys, made in the console or by operators through the CLI. Only a hash of the secret is kept. */
export const apiKeys = sqliteTable(
  'api_keys',
  {
    publicId: text('public_id').primaryKey(), // the 16 hex after ph_live_; safe to show and log
    organizationId: text('organization_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    // Hex SHA-256 of the 48-hex secret; the secret itself is never stored
    secretSha256: text('secret_sha256').notNull(),
    name: text('name').notNull().default(''), // the owner's label in the console ("CI", "staging"); '' from the CLI
    createdAt: text('created_at').notNull(),
    lastUsedAt: text('last_used_at'), // refreshed at most once a minute to spare the writer
    revokedAt: text('revoked_at'), // set by `cli keys revoke`; a revoked key answers 401
    // The console user who made it, shown on the keys page (with a warning once they leave the
    // organisation; users are never deleted); null when the CLI made it, or it predates this column.
    createdBy: text('created_by').references(() => users.id),
  },
  (table) => [index('api_keys_by_organization').on(table.organizationId)],
)

/** Inboxes. Deleting one deletes its messages through the foreign keys below. */
export const inboxes = sqliteTable(
  'inboxes',
  {
    id: text('id').primaryKey(), // inbox_ + 32 hex
    organizationId: text('organization_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    localPart: text('local_part').notNull(), // lowercase; unique across all organisations (one MX)
    address: text('address').notNull(), // local_part@RECEIVING_DOMAIN at creation time
    // 'creating' while the routing rule is being made (holds the address and a quota slot);
    // only 'active' rows are visible to the API and receive mail.
    state: text('state', { enum: ['creating', 'active'] }).notNull(),
    routingRuleId: text('routing_rule_id'), // the provider's rule id; null with EMAIL_ROUTING=none
    createdAt: text('created_at').notNull(),
  },
  (table) => [
    uniqueIndex('inboxes_local_part_unique').on(table.localPart),
    // listInboxes (newest first, keyset) and the active-inbox count
    index('inboxes_by_organization_newest').on(table.organizationId, table.state, table.createdAt, table.id),
  ],
)

/** createInbox idempotency: the first response for (organisation, key) is replayed for 24 hours. */
export const idempotencyRecords = sqliteTable(
  'idempotency_records',
  {
    organizationId: text('organization_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    idempotencyKey: text('idempotency_key').notNull(),
    requestFingerprint: text('request_fingerprint').notNull(), // SHA-256 of the normalised body
    // 'in_progress' until the inbox exists; a failed request deletes its row so a retry runs anew
    state: text('state', { enum: ['in_progress', 'completed'] }).notNull(),
    responseBody: text('response_body'), // the cached 201 body (JSON), set when completed
    createdAt: text('created_at').notNull(),
    expiresAt: text('expires_at').notNull(), // created_at + IDEMPOTENCY_HOURS; swept after
  },
  (table) => [
    primaryKey({ columns: [table.organizationId, table.idempotencyKey] }),
    index('idempotency_records_by_expiry').on(table.expiresAt),
  ],
)

/** Stored emails received this month, per organisation: the monthly quota and getUsage read it. */
export const monthlyEmailUsage = sqliteTable(
  'monthly_email_usage',
  {
    organizationId: text('organization_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    month: text('month').notNull(), // UTC calendar month, 'YYYY-MM'
    received: integer('received').notNull(), // incremented in the same transaction that stores the message
  },
  (table) => [primaryKey({ columns: [table.organizationId, table.month] })],
)

/** Messages accepted per five-minute UTC bucket, for the per-inbox and per-organisation burst limits. */
export const inboundBursts = sqliteTable(
  'inbound_bursts',
  {
    subjectId: text('subject_id').notNull(), // an org_… or inbox_… id: the limit's scope
    bucketStartsAt: text('bucket_starts_at').notNull(), // start of the five-minute bucket
    accepted: integer('accepted').notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.subjectId, table.bucketStartsAt] }),
    index('inbound_bursts_by_bucket').on(table.bucketStartsAt),
  ],
)

/** Process-wide settings that must survive restarts (the cursor signing secret). */
export const settings = sqliteTable('settings', {
  name: text('name').primaryKey(),
  value: text('value').notNull(),
})

/**
 * Received messages: one small summary row each. Bodies live in message_contents and raw
 * bytes in message_sources, so a list query reads only short rows that fit their B-tree
 * page (with the bodies inline, reading `preview` meant an overflow page per row).
 */
export const messages = sqliteTable(
  'messages',
  {
    id: text('id').primaryKey(), // msg_ + 32 hex
    inboxId: text('inbox_id')
      .notNull()
      .references(() => inboxes.id, { onDelete: 'cascade' }),
    // Copied from the inbox so id lookups check the tenant in one step
    organizationId: text('organization_id').notNull(),
    fromName: text('from_name').notNull(), // '' when the From header has no display name
    fromAddress: text('from_address').notNull(), // From header, else the envelope sender, else ''
    toAddress: text('to_address').notNull(), // the receiving inbox address
    subject: text('subject').notNull(),
    preview: text('preview').notNull(), // first ~200 characters of the text (or de-tagged html)
    sizeBytes: integer('size_bytes').notNull(), // raw RFC 5322 size as received over SMTP
    receivedAt: text('received_at').notNull(),
    expiresAt: text('expires_at').notNull(), // received_at + RETENTION_DAYS; the sweeper deletes after
    // Lowercased copies that the list filters compare against (subject, sender, sender_domain).
    searchSubject: text('search_subject').notNull(),
    searchSender: text('search_sender').notNull(),
    searchSenderDomain: text('search_sender_domain').notNull(),
    internetMessageId: text('internet_message_id'), // as in the Message-ID header, angle brackets kept
    // When a console member first opened it (or marked it read); null while unread. Console
    // only: the API has no read state, and reading a message over /v1 never sets it. Shared by
    // the organisation's members, as a team inbox is.
    readAt: text('read_at'),
  },
  (table) => [
    // listOrWaitForMessages: newest first within one inbox, keyset on (received_at, id)
    index('messages_by_inbox_newest').on(table.inboxId, table.receivedAt, table.id),
    index('messages_by_expiry').on(table.expiresAt),
    // The console's search across an organisation's inboxes: its newest messages first, bounded.
    index('messages_by_organization_newest').on(table.organizationId, table.receivedAt, table.id),
  ],
)

/** Parsed content of a message, returned by getMessage and include=content. */
export const messageContents = sqliteTable('message_contents', {
  messageId: text('message_id')
    .primaryKey()
    .references(() => messages.id, { onDelete: 'cascade' }),
  textBody: text('text_body'), // decoded text/plain body, null when the message has none
  htmlBody: text('html_body'), // decoded text/html body, null when the message has none
  headersJson: text('headers_json').notNull(), // JSON array of [name, value] in received order
})

/**
 * The console's text search: the lowercased start of each message's text part (or, with
 * none, its HTML with the tags taken out), TEXT_SEARCH_CHARS at most. A table of its own so
 * the search reads short rows, not the bodies and headers of message_contents.
 */
export const messageSearchTexts = sqliteTable('message_search_texts', {
  messageId: text('message_id')
    .primaryKey()
    .references(() => messages.id, { onDelete: 'cascade' }),
  // Lowercased, at most TEXT_SEARCH_CHARS characters, after the folded
  // subject when folding changed it (core/inbound/search-text.ts)
  text: text('text').notNull(),
})

/** The raw message exactly as received, one row per message (kept apart from the summary). */
export const messageSources = sqliteTable('message_sources', {
  messageId: text('message_id')
    .primaryKey()
    .references(() => messages.id, { onDelete: 'cascade' }),
  raw: blob('raw', { mode: 'buffer' }).notNull(),
  // Hex SHA-256 of `raw`, written with it and checked before it is served (core/common/stored-bytes.ts);
  // null for rows stored before the column existed, which are served unchecked.
  sha256: text('sha256'),
})

/** Attachment metadata; bytes are in attachment_contents. */
export const attachments = sqliteTable(
  'attachments',
  {
    id: text('id').primaryKey(), // att_ + 32 hex
    messageId: text('message_id')
      .notNull()
      .references(() => messages.id, { onDelete: 'cascade' }),
    organizationId: text('organization_id').notNull(), // tenant check for downloads without a join
    position: integer('position').notNull(), // order within the message
    filename: text('filename').notNull(),
    contentType: text('content_type').notNull(), // sanitised MIME type, served as Content-Type
    sizeBytes: integer('size_bytes').notNull(), // decoded size
    disposition: text('disposition', { enum: ['attachment', 'inline'] }).notNull(),
    contentId: text('content_id'), // without angle brackets, as used in cid: URLs
  },
  (table) => [index('attachments_by_message').on(table.messageId, table.position)],
)

/** Decoded attachment bytes, one row per attachment. */
export const attachmentContents = sqliteTable('attachment_contents', {
  attachmentId: text('attachment_id')
    .primaryKey()
    .references(() => attachments.id, { onDelete: 'cascade' }),
  content: blob('content', { mode: 'buffer' }).notNull(),
  // Hex SHA-256 of `content`, written with it and checked before it is served (core/common/stored-bytes.ts);
  // null for rows stored before the column existed, which are served unchecked.
  sha256: text('sha256'),
})

/**
 * The console's link checks: what one run found for a message's links and images, kept so its
 * result page is a plain GET (shareable; Back and reload never run the check again). Goes
 * with its message.
 */
export const linkChecks = sqliteTable(
  'link_checks',
  {
    id: text('id').primaryKey(), // check_ + 32 hex: names the result page
    messageId: text('message_id')
      .notNull()
      .references(() => messages.id, { onDelete: 'cascade' }),
    organizationId: text('organization_id').notNull(), // tenant check in one step, as for messages
    createdAt: text('created_at').notNull(),
    // JSON array of checked URLs with each hop (core/messages/link-check.ts)
    resultsJson: text('results_json').notNull(),
  },
  (table) => [index('link_checks_by_message').on(table.messageId)],
)

/** Console accounts. Only people sign in here; API keys never reach the console. */
export const users = sqliteTable('users', {
  id: text('id').primaryKey(), // user_ + 32 hex
  email: text('email').notNull().unique(), // lowercased; the sign-in name
  passwordHash: text('password_hash').notNull(), // argon2id PHC string from Bun.password; never the password
  // The instance operator (made by /setup): creates organisations, sets their limits, resets passwords.
  isOperator: integer('is_operator', { mode: 'boolean' }).notNull().default(false),
  createdAt: text('created_at').notNull(),
})

/**
 * Signed-in browsers. The cookie holds a random token; only its
 * SHA-256 is stored, so a copied database opens no session.
 */
export const sessions = sqliteTable(
  'sessions',
  {
    tokenSha256: text('token_sha256').primaryKey(),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    createdAt: text('created_at').notNull(),
    expiresAt: text('expires_at').notNull(), // slides forward on use (see core/sessions/sessions.ts)
    clientAddress: text('client_address').notNull(), // where it was opened, shown to its user
  },
  (table) => [index('sessions_by_user').on(table.userId), index('sessions_by_expiry').on(table.expiresAt)],
)

/** Who belongs to which organisation. A user sees only organisations listed here for them. */
export const memberships = sqliteTable(
  'memberships',
  {
    organizationId: text('organization_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    // Owners manage members and keys and read the audit log
    role: text('role', { enum: ['owner', 'member'] }).notNull(),
    createdAt: text('created_at').notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.organizationId, table.userId] }),
    index('memberships_by_user').on(table.userId),
  ],
)

/** One-time invite links. Like sessions, only the SHA-256 of the link's token is kept. */
export const invites = sqliteTable(
  'invites',
  {
    tokenSha256: text('token_sha256').primaryKey(),
    id: text('id').notNull().unique(), // invite_ + 32 hex: names the invite in pages and the audit log
    organizationId: text('organization_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    role: text('role', { enum: ['owner', 'member'] }).notNull(), // the role the new member gets
    createdBy: text('created_by').notNull(), // user id of the owner who made it
    createdAt: text('created_at').notNull(),
    expiresAt: text('expires_at').notNull(), // a link older than this is refused
    usedAt: text('used_at'), // set on acceptance or withdrawal; a used link is refused
  },
  (table) => [index('invites_by_organization').on(table.organizationId)],
)

/** Who changed what, for owners (organisation events) and the operator (instance events, organization_id null). */
export const auditEvents = sqliteTable(
  'audit_events',
  {
    id: integer('id').primaryKey({ autoIncrement: true }), // insertion order
    organizationId: text('organization_id').references(() => organizations.id, { onDelete: 'cascade' }),
    actor: text('actor').notNull(), // the user's email at the time, or 'cli' for the admin CLI
    action: text('action').notNull(), // e.g. key.created, member.removed, limits.changed
    target: text('target').notNull(), // what it acted on: a key's public id, a user's email, an org id
    detail: text('detail').notNull().default(''), // short human text, never a secret
    clientAddress: text('client_address').notNull(), // the browser's address, '' from the CLI
    createdAt: text('created_at').notNull(),
  },
  (table) => [index('audit_events_by_organization').on(table.organizationId, table.id)],
)
