/**
 * Tables that exist only in PostgreSQL mode. With one process these are maps in memory
 * (core/limits/request-rate-limiter.ts, core/limits/long-poll-slots.ts); with several machines on one
 * database they must be shared, so they live here. They have no SQLite counterpart, and the
 * schema parity test lists them as the only tables allowed to differ.
 */
import { index, integer, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core'

const at = (name: string) => timestamp(name, { withTimezone: true, precision: 3, mode: 'string' })

/** Requests admitted per subject (a key or an organisation) per UTC minute. */
export const requestCounts = pgTable(
  'request_counts',
  {
    subjectId: text('subject_id').notNull(), // 'key:<public id>' or 'org:<org id>'
    minuteStartsAt: at('minute_starts_at').notNull(), // the UTC minute, from the injected clock
    admitted: integer('admitted').notNull(), // never above the limit: the upsert refuses the next one
  },
  (table) => [
    primaryKey({ columns: [table.subjectId, table.minuteStartsAt] }),
    index('request_counts_by_minute').on(table.minuteStartsAt),
  ],
)

/** Slots held right now (concurrent long polls), each a lease its machine renews. */
export const slotLeases = pgTable(
  'slot_leases',
  {
    id: text('id').primaryKey(), // one per acquisition, random
    subjectId: text('subject_id').notNull(), // the same subject shapes as request_counts
    holder: text('holder').notNull(), // the machine that holds it; its heartbeat renews all of its leases
    expiresAt: at('expires_at').notNull(), // a dead machine's slots count until this passes
  },
  (table) => [
    index('slot_leases_by_subject').on(table.subjectId, table.expiresAt),
    index('slot_leases_by_holder').on(table.holder),
  ],
)

/**
 * Units of the monthly quota and the five-minute bursts held by SMTP transactions in flight
 * (core/inbound/reservations.ts keeps them in memory for one process). Admission counts the
 * stored usage plus these rows; the storing transaction deletes its row as it counts the message.
 */
export const quotaReservations = pgTable(
  'quota_reservations',
  {
    id: text('id').primaryKey(), // one per admitted recipient, random
    organizationId: text('organization_id').notNull(), // whose monthly quota and organisation burst it holds
    inboxId: text('inbox_id').notNull(), // whose inbox burst it holds
    month: text('month').notNull(), // 'YYYY-MM' of the clock at admission, as in monthly_email_usage
    bucketStartsAt: at('bucket_starts_at').notNull(), // the five-minute bucket at admission, as in inbound_bursts
    holder: text('holder').notNull(), // the machine whose SMTP transaction holds it; its heartbeat renews it
    expiresAt: at('expires_at').notNull(), // a dead machine's reservations count until this passes
  },
  (table) => [
    index('quota_reservations_by_organization').on(table.organizationId, table.expiresAt),
    index('quota_reservations_by_holder').on(table.holder),
  ],
)

/**
 * The lease of an `in_progress` idempotency record: which machine runs the request and until
 * when it is presumed alive. One row per in-progress record, deleted when the record completes
 * or is released; a record whose lease has run out belongs to a dead request and is taken over.
 */
export const idempotencyLeases = pgTable(
  'idempotency_leases',
  {
    organizationId: text('organization_id').notNull(), // with the key, names the idempotency_records row
    idempotencyKey: text('idempotency_key').notNull(),
    // Random per claim: a holder that lost its claim to a takeover cannot complete it
    claimId: text('claim_id').notNull(),
    holder: text('holder').notNull(), // the machine running the request; its heartbeat renews the lease
    expiresAt: at('expires_at').notNull(), // after this, another machine may take the key over
  },
  (table) => [
    primaryKey({ columns: [table.organizationId, table.idempotencyKey] }),
    index('idempotency_leases_by_holder').on(table.holder),
  ],
)

/**
 * Failed password checks per slot (an account, an address, or the two together) in a
 * window, for the console's sign-in throttle (core/users/sign-in-throttle.ts keeps them in
 * memory for one process). A row lives at most one window; the sweep deletes ended ones.
 */
export const signInFailures = pgTable(
  'sign_in_failures',
  {
    // 'account:<email>', 'address:<ip>' or 'pair:<ip>|<email>'; over 200 characters, 'sha256:<hex>' of it
    slot: text('slot').primaryKey(),
    // The password mark the failures were made against ('' for an address); another mark resets the count
    credential: text('credential').notNull(),
    failures: integer('failures').notNull(), // failed (or still running) password checks in this window
    windowEndsAt: at('window_ends_at').notNull(), // when these failures are forgiven
    nextCheckAt: at('next_check_at'), // a slowed account's next free password check; null while not slowed
  },
  (table) => [index('sign_in_failures_by_window').on(table.windowEndsAt)],
)
