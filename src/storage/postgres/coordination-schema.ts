/**
 * Tables that exist only in PostgreSQL mode. With one process these are maps in memory
 * (core/request-rate-limiter.ts, core/long-poll-slots.ts); with several machines on one
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
  (table) => [primaryKey({ columns: [table.subjectId, table.minuteStartsAt] }), index('request_counts_by_minute').on(table.minuteStartsAt)],
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
  (table) => [index('slot_leases_by_subject').on(table.subjectId, table.expiresAt), index('slot_leases_by_holder').on(table.holder)],
)
