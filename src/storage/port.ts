/**
 * The storage port: everything core asks of a database, as asynchronous operations grouped by
 * area. Two adapters implement it, one per dialect: src/storage/sqlite/store.ts (the default,
 * one file beside the server) and src/storage/postgres/store.ts (any number of machines on one
 * PostgreSQL). test/contract/ runs core's verbs against both.
 *
 * Conventions every area follows:
 * - An operation is atomic: whatever it writes commits together or not at all. A change that
 *   must commit with another (an audit row, an idempotency record, a usage counter) is one
 *   operation, taking what it needs as input (for example `audit: AuditEntry | null`).
 * - Rules stay in core. An operation takes the numbers it enforces (a limit, a cut-off time)
 *   as input and answers what happened (`{ row } | { refused: 'quota' }`); it never decides a
 *   policy itself and never throws core's errors. Storage imports nothing from core.
 * - Rows have the shapes of src/storage/rows.ts in both dialects: times are RFC 3339 UTC
 *   strings with milliseconds, sizes numbers, raw bytes Buffers.
 * - The SQLite adapter keeps its synchronous transactions and group commit underneath; its
 *   operations resolve after the commit (and, where the server acknowledges, after the WAL
 *   sync), exactly as the verbs did before the port existed.
 */
import type { AccountStore } from './port/accounts.ts'
import type { InboundStore } from './port/inbound.ts'
import type { InboxStore } from './port/inboxes.ts'
import type { MessageStore } from './port/messages.ts'
import type { OrganizationStore } from './port/organizations.ts'

export type { AuditEntry } from './port/audit-entry.ts'
export type { DatabaseFile } from './port/database-file.ts'
export type { StorageObserver } from './port/observer.ts'

export type Dialect = 'sqlite' | 'postgres'

export interface Store {
  readonly dialect: Dialect
  /** Organisations and their limits, members, invites, the audit log. */
  readonly organizations: OrganizationStore
  /** Users, first-run setup, console sessions, API keys, instance settings. */
  readonly accounts: AccountStore
  /** Inboxes and createInbox's idempotency records. */
  readonly inboxes: InboxStore
  /** Reading and deleting stored messages, their sources and attachments; usage. */
  readonly messages: MessageStore
  /** Admission counts, storing inbound mail, retention, the readiness heartbeat. */
  readonly inbound: InboundStore
  /**
   * Stops what the adapter runs in the background (PostgreSQL: the heartbeat of idempotency
   * leases) and gives back the leases this process holds, so other machines need not wait for
   * them to run out. The connection or file stays open: its owner closes it after.
   */
  close(): Promise<void>
}
