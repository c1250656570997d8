/** Inboxes and createInbox's idempotency records. See ../port.ts for the conventions every operation follows. */
import type { InboxRow } from '../rows.ts'

/** A candidate address for a new inbox: core generates these, storage takes the first free one. */
export interface InboxCandidate {
  id: string
  localPart: string
  address: string
}

/** A claimed idempotency key; only the request holding it may complete or release it. */
export interface IdempotencyClaim {
  organizationId: string
  key: string
  /** Random per claim (PostgreSQL: a request whose claim was taken over cannot complete it); null in SQLite. */
  claimId: string | null
}

export type IdempotencyClaimOutcome =
  | { outcome: 'claimed'; claim: IdempotencyClaim }
  /** A completed request with the same fingerprint: replay this stored body (null: none stored). */
  | { outcome: 'cached'; responseBody: string | null }
  /** The key was used with a different fingerprint. */
  | { outcome: 'reused' }
  /** Another request with this key is still running. */
  | { outcome: 'in_progress' }

export interface InboxStatsRow {
  inboxId: string
  messages: number
  /** Of those, how many no console member has opened or marked read. */
  unread: number
  lastReceivedAt: string | null
}

export interface InboxStore {
  /**
   * createInbox's first step, one transaction: counts the organisation's 'active' and
   * 'creating' inboxes against `activeInboxLimit`, then inserts the first candidate whose local
   * part is free as 'creating'. Answers the row, or what refused it (`quota`; `taken` when every
   * candidate's local part is held).
   */
  reserveInbox(input: {
    organizationId: string
    activeInboxLimit: number
    candidates: InboxCandidate[]
    createdAt: string
  }): Promise<{ row: InboxRow } | { refused: 'quota' | 'taken' }>
  /**
   * Turns a reserved row 'active' with its routing rule and, in the same transaction, completes
   * the idempotency claim with `responseBody` (JSON text). Answers the active row, or null when
   * the reserved row is gone or (PostgreSQL) the claim was taken over; then nothing is written.
   */
  activateInbox(input: {
    inboxId: string
    routingRuleId: string | null
    idempotency: { claim: IdempotencyClaim; responseBody: string } | null
  }): Promise<InboxRow | null>
  /**
   * Deletes the row of a createInbox that failed (its routing rule
   * failed, or its activation did and the rule was taken back).
   */
  discardReservation(inboxId: string): Promise<void>
  /**
   * At boot: deletes 'creating' rows and 'in_progress' idempotency records whose request cannot
   * still be running (SQLite: all of them, one process serves the API; PostgreSQL: rows created
   * at or before `staleBefore`, and records whose lease ran out). Answers what it deleted.
   */
  discardUnfinished(input: { staleBefore: string }): Promise<{ inboxes: InboxRow[]; releasedClaims: number }>
  /** The organisation's inbox with this id if it is 'active', else undefined. */
  findActiveInbox(organizationId: string, inboxId: string): Promise<InboxRow | undefined>
  /**
   * Up to `limit` active inboxes of the organisation, newest first by (created_at, id), starting
   * strictly after `after` when given (keyset paging); with `addressContains` (lowercase), only
   * those whose address contains it (the console's filter; a plain substring, no wildcards).
   */
  listActiveInboxes(input: {
    organizationId: string
    after: { at: string; id: string } | undefined
    limit: number
    addressContains?: string
  }): Promise<InboxRow[]>
  /** Deletes an inbox with its messages, sources and attachments; answers whether it existed. */
  deleteInbox(inboxId: string): Promise<boolean>
  /**
   * Message count, unread count and newest arrival per listed inbox, over
   * messages expiring after `now`; inboxes without any are left out.
   */
  inboxStats(input: { inboxIds: string[]; now: string }): Promise<InboxStatsRow[]>

  /**
   * Claims (organisation, key) as 'in_progress' unless a record retained past `now` exists: then
   * answers `reused`, `in_progress` or `cached`. An expired record is replaced. `expiresAt` is
   * the new record's retention.
   */
  claimIdempotencyKey(input: {
    organizationId: string
    key: string
    fingerprint: string
    now: string
    expiresAt: string
  }): Promise<IdempotencyClaimOutcome>
  /** Forgets a failed request's claim so the key can be retried at once; harmless if already gone. */
  releaseIdempotencyClaim(claim: IdempotencyClaim): Promise<void>
  /** Deletes up to `batch` records that expired at or before `now`; answers how many. */
  sweepExpiredIdempotencyRecords(input: { now: string; batch: number }): Promise<number>

  /**
   * The cursor signing secret: stores `candidate` if none exists yet (the first machine to start
   * wins), then answers the stored one, so every machine and restart signs alike.
   */
  cursorSecret(candidate: string): Promise<string>
}
