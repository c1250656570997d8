/**
 * The PostgreSQL schema: `../sqlite/schema.ts` table for table, column for column, index
 * for index, under the same names, so a `psql` user reads the same schema as a `sqlite3` one.
 * test/postgres/postgres.schema-parity.test.ts fails when the two drift apart, so a change to
 * the SQLite schema is mirrored here, then `bun run db:generate:postgres` writes a migration
 * into drizzle/postgres/.
 *
 * Types follow what each column holds rather than SQLite's storage classes: every `*_at`
 * column is `timestamptz` with millisecond precision (the API's RFC 3339 times are
 * milliseconds; read back, PostgreSQL's text form is normalised by the storage adapter),
 * byte sizes are `bigint`, raw bytes `bytea`, the operator flag `boolean`. Counts and limits
 * stay `integer`. Column comments are in `../sqlite/schema.ts`; only what differs is said here.
 */
import {
  bigint,
  boolean,
  customType,
  index,
  integer,
  pgTable,
  primaryKey,
  text,
  uniqueIndex,
} from 'drizzle-orm/pg-core'
import { rfc3339FromPostgres } from './time.ts'

/**
 * RFC 3339 strings in and out of the core; timestamptz(3) in the database. Read back, the
 * text PostgreSQL sends is turned into the core's form (time.ts), so rows of both dialects
 * are alike.
 */
const at = customType<{ data: string; driverData: string }>({
  dataType: () => 'timestamp(3) with time zone',
  fromDriver: rfc3339FromPostgres,
})
/** Byte counts: a 64-bit column, read as a JavaScript number (sizes stay far below 2^53). */
const bytes = (name: string) => bigint(name, { mode: 'number' })
/** Raw bytes as Buffers, like bun:sqlite's blob columns. */
const bytea = customType<{ data: Buffer; driverData: Buffer }>({ dataType: () => 'bytea' })
/**
 * Text taken from received mail (subject, names, bodies, headers, file names). Mail may carry
 * NUL, which SQLite stores and PostgreSQL text refuses; the API serves it as sent in both
 * modes. So NUL is written as U+FFFF '0' and U+FFFF itself as U+FFFF '1' (a noncharacter,
 * rare in mail; every U+FFFF stored is followed by one of the two digits, so reading back is
 * exact). Substring search on these columns is unchanged for filters without NUL or U+FFFF;
 * a filter is escaped the same way, so it finds exactly what SQLite finds (store/messages.ts).
 */
const ESCAPE = '\uffff'
export const encodeMailText = (value: string): string =>
  value.includes('\0') || value.includes(ESCAPE)
    ? value.replaceAll(ESCAPE, `${ESCAPE}1`).replaceAll('\0', `${ESCAPE}0`)
    : value
export const decodeMailText = (value: string): string =>
  value.includes(ESCAPE) ? value.replace(/\uffff([01])/g, (_, digit: string) => (digit === '0' ? '\0' : ESCAPE)) : value
const mailText = customType<{ data: string; driverData: string }>({
  dataType: () => 'text',
  toDriver: encodeMailText,
  fromDriver: decodeMailText,
})

export const organizations = pgTable('organizations', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  createdAt: at('created_at').notNull(),
  limitActiveInboxes: integer('limit_active_inboxes'),
  limitMonthlyEmails: integer('limit_monthly_emails'),
  limitInboxBurst: integer('limit_inbox_burst'),
  limitOrgBurst: integer('limit_org_burst'),
  limitRequestsPerKey: integer('limit_requests_per_key'),
  limitRequestsPerOrg: integer('limit_requests_per_org'),
  limitLongPollsPerKey: integer('limit_long_polls_per_key'),
  limitLongPollsPerOrg: integer('limit_long_polls_per_org'),
})

export const apiKeys = pgTable(
  'api_keys',
  {
    publicId: text('public_id').primaryKey(),
    organizationId: text('organization_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    secretSha256: text('secret_sha256').notNull(),
    name: text('name').notNull().default(''),
    createdAt: at('created_at').notNull(),
    lastUsedAt: at('last_used_at'),
    revokedAt: at('revoked_at'),
    createdBy: text('created_by').references(() => users.id),
  },
  (table) => [index('api_keys_by_organization').on(table.organizationId)],
)

export const inboxes = pgTable(
  'inboxes',
  {
    id: text('id').primaryKey(),
    organizationId: text('organization_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    localPart: text('local_part').notNull(),
    address: text('address').notNull(),
    state: text('state', { enum: ['creating', 'active'] }).notNull(),
    routingRuleId: text('routing_rule_id'),
    createdAt: at('created_at').notNull(),
  },
  (table) => [
    uniqueIndex('inboxes_local_part_unique').on(table.localPart),
    index('inboxes_by_organization_newest').on(table.organizationId, table.state, table.createdAt, table.id),
  ],
)

export const idempotencyRecords = pgTable(
  'idempotency_records',
  {
    organizationId: text('organization_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    idempotencyKey: text('idempotency_key').notNull(),
    requestFingerprint: text('request_fingerprint').notNull(),
    state: text('state', { enum: ['in_progress', 'completed'] }).notNull(),
    responseBody: text('response_body'),
    createdAt: at('created_at').notNull(),
    expiresAt: at('expires_at').notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.organizationId, table.idempotencyKey] }),
    index('idempotency_records_by_expiry').on(table.expiresAt),
  ],
)

export const monthlyEmailUsage = pgTable(
  'monthly_email_usage',
  {
    organizationId: text('organization_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    month: text('month').notNull(), // 'YYYY-MM', a calendar month rather than an instant
    received: integer('received').notNull(),
  },
  (table) => [primaryKey({ columns: [table.organizationId, table.month] })],
)

export const inboundBursts = pgTable(
  'inbound_bursts',
  {
    subjectId: text('subject_id').notNull(),
    bucketStartsAt: at('bucket_starts_at').notNull(),
    accepted: integer('accepted').notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.subjectId, table.bucketStartsAt] }),
    index('inbound_bursts_by_bucket').on(table.bucketStartsAt),
  ],
)

export const settings = pgTable('settings', {
  name: text('name').primaryKey(),
  value: text('value').notNull(),
})

export const messages = pgTable(
  'messages',
  {
    id: text('id').primaryKey(),
    inboxId: text('inbox_id')
      .notNull()
      .references(() => inboxes.id, { onDelete: 'cascade' }),
    organizationId: text('organization_id').notNull(),
    fromName: mailText('from_name').notNull(),
    fromAddress: mailText('from_address').notNull(),
    toAddress: text('to_address').notNull(),
    subject: mailText('subject').notNull(),
    preview: mailText('preview').notNull(),
    sizeBytes: bytes('size_bytes').notNull(),
    receivedAt: at('received_at').notNull(),
    expiresAt: at('expires_at').notNull(),
    searchSubject: mailText('search_subject').notNull(),
    searchSender: mailText('search_sender').notNull(),
    searchSenderDomain: mailText('search_sender_domain').notNull(),
    internetMessageId: mailText('internet_message_id'),
    readAt: at('read_at'),
  },
  (table) => [
    index('messages_by_inbox_newest').on(table.inboxId, table.receivedAt, table.id),
    index('messages_by_expiry').on(table.expiresAt),
    index('messages_by_organization_newest').on(table.organizationId, table.receivedAt, table.id),
  ],
)

export const messageContents = pgTable('message_contents', {
  messageId: text('message_id')
    .primaryKey()
    .references(() => messages.id, { onDelete: 'cascade' }),
  textBody: mailText('text_body'),
  htmlBody: mailText('html_body'),
  headersJson: mailText('headers_json').notNull(), // kept as text, not jsonb: served back byte for byte
})

export const messageSearchTexts = pgTable('message_search_texts', {
  messageId: text('message_id')
    .primaryKey()
    .references(() => messages.id, { onDelete: 'cascade' }),
  text: mailText('text').notNull(),
})

export const messageSources = pgTable('message_sources', {
  messageId: text('message_id')
    .primaryKey()
    .references(() => messages.id, { onDelete: 'cascade' }),
  raw: bytea('raw').notNull(),
  sha256: text('sha256'),
})

export const attachments = pgTable(
  'attachments',
  {
    id: text('id').primaryKey(),
    messageId: text('message_id')
      .notNull()
      .references(() => messages.id, { onDelete: 'cascade' }),
    organizationId: text('organization_id').notNull(),
    position: integer('position').notNull(),
    filename: mailText('filename').notNull(),
    contentType: mailText('content_type').notNull(),
    sizeBytes: bytes('size_bytes').notNull(),
    disposition: text('disposition', { enum: ['attachment', 'inline'] }).notNull(),
    contentId: mailText('content_id'),
  },
  (table) => [index('attachments_by_message').on(table.messageId, table.position)],
)

export const attachmentContents = pgTable('attachment_contents', {
  attachmentId: text('attachment_id')
    .primaryKey()
    .references(() => attachments.id, { onDelete: 'cascade' }),
  content: bytea('content').notNull(),
  sha256: text('sha256'),
})

export const linkChecks = pgTable(
  'link_checks',
  {
    id: text('id').primaryKey(),
    messageId: text('message_id')
      .notNull()
      .references(() => messages.id, { onDelete: 'cascade' }),
    organizationId: text('organization_id').notNull(),
    createdAt: at('created_at').notNull(),
    resultsJson: mailText('results_json').notNull(), // URLs come from mail
  },
  (table) => [index('link_checks_by_message').on(table.messageId)],
)

export const users = pgTable('users', {
  id: text('id').primaryKey(),
  email: text('email').notNull().unique(),
  passwordHash: text('password_hash').notNull(),
  isOperator: boolean('is_operator').notNull().default(false),
  createdAt: at('created_at').notNull(),
})

export const sessions = pgTable(
  'sessions',
  {
    tokenSha256: text('token_sha256').primaryKey(),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    createdAt: at('created_at').notNull(),
    expiresAt: at('expires_at').notNull(),
    clientAddress: text('client_address').notNull(),
  },
  (table) => [index('sessions_by_user').on(table.userId), index('sessions_by_expiry').on(table.expiresAt)],
)

export const memberships = pgTable(
  'memberships',
  {
    organizationId: text('organization_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    userId: text('user_id')
      .notNull()
      .references(() => users.id, { onDelete: 'cascade' }),
    role: text('role', { enum: ['owner', 'member'] }).notNull(),
    createdAt: at('created_at').notNull(),
  },
  (table) => [
    primaryKey({ columns: [table.organizationId, table.userId] }),
    index('memberships_by_user').on(table.userId),
  ],
)

export const invites = pgTable(
  'invites',
  {
    tokenSha256: text('token_sha256').primaryKey(),
    id: text('id').notNull().unique(),
    organizationId: text('organization_id')
      .notNull()
      .references(() => organizations.id, { onDelete: 'cascade' }),
    role: text('role', { enum: ['owner', 'member'] }).notNull(),
    createdBy: text('created_by').notNull(),
    createdAt: at('created_at').notNull(),
    expiresAt: at('expires_at').notNull(),
    usedAt: at('used_at'),
  },
  (table) => [index('invites_by_organization').on(table.organizationId)],
)

export const auditEvents = pgTable(
  'audit_events',
  {
    // Insertion order, as SQLite's AUTOINCREMENT: an identity column never reuses a number.
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    organizationId: text('organization_id').references(() => organizations.id, { onDelete: 'cascade' }),
    actor: text('actor').notNull(),
    action: text('action').notNull(),
    target: text('target').notNull(),
    detail: text('detail').notNull().default(''),
    clientAddress: text('client_address').notNull(),
    createdAt: at('created_at').notNull(),
  },
  (table) => [index('audit_events_by_organization').on(table.organizationId, table.id)],
)
