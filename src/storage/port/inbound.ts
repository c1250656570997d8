/**
 * Admission counts, storing inbound mail, retention sweeps and the readiness heartbeat. See
 * ../port.ts for the conventions every operation follows.
 */

/** An organisation's stored limit overrides that RCPT TO enforces; null follows the environment's value. */
export interface InboundLimitOverrides {
  monthlyEmails: number | null
  inboxBurst: number | null
  orgBurst: number | null
}

/** The committed counts the inbound limits compare against, for one month and one five-minute bucket. */
export interface InboundCounts {
  /** Messages stored for the organisation in the month. */
  monthReceived: number
  /** Messages accepted for the inbox in the bucket. */
  inboxAccepted: number
  /** Messages accepted for the organisation in the bucket. */
  orgAccepted: number
}

/** What admitting one more message for an inbox depends on in the database. */
export interface AdmissionFacts {
  inboxId: string
  organizationId: string
  limits: InboundLimitOverrides
  counts: InboundCounts
}

/** The periods the counters of a store are kept in: a 'YYYY-MM' month and a bucket's start (RFC 3339). */
export interface InboundPeriods {
  month: string
  bucket: string
}

/** One attachment of a message to store, its id chosen by core for each copy. */
export interface InboundAttachment {
  filename: string
  contentType: string
  sizeBytes: number
  disposition: 'attachment' | 'inline'
  contentId: string | null
  content: Buffer
  sha256: string
}

/** The parsed message as stored for every recipient: core builds every derived field. */
export interface InboundMessage {
  fromName: string
  fromAddress: string
  subject: string
  preview: string
  sizeBytes: number
  searchSubject: string
  searchSender: string
  searchSenderDomain: string
  internetMessageId: string | null
  textBody: string | null
  htmlBody: string | null
  headersJson: string
  searchText: string
  /**
   * Handed over with the message, like each attachment's `content`: a store may move the bytes
   * to another thread (SQLite's blob stager).
   */
  raw: Buffer
  rawSha256: string
  attachments: InboundAttachment[]
}

/** The three inbound limits in force for one inbox (overrides already applied). */
export interface InboundLimits {
  monthlyEmails: number
  inboxBurst: number
  orgBurst: number
}

/** The spec's refusal codes of the inbound limits, checked in this order. */
export type InboundLimitCode = 'monthly_quota_exceeded' | 'inbox_burst_exceeded' | 'organization_burst_exceeded'

/**
 * PostgreSQL mode: one unit of quota held in the database since RCPT TO, shared by every
 * machine. The storing transaction turns it into stored counts (or refuses it when its period
 * turned and the new one is full); core releases it when no message is stored.
 */
export interface InboundHold {
  id: string
  organizationId: string
  inboxId: string
  /** 'YYYY-MM' at admission. */
  month: string
  /** The five-minute bucket at admission, RFC 3339. */
  bucketStartsAt: string
  /** The limits admission checked, checked again if the period turned before the store. */
  limits: InboundLimits
}

/** One inbox to store a copy in, with the ids its rows get. */
export interface InboundDelivery {
  inboxId: string
  organizationId: string
  messageId: string
  /** One id per attachment of the message, in order. */
  attachmentIds: string[]
  /** PostgreSQL mode: the unit admission holds, converted by the storing transaction; absent in SQLite mode. */
  hold?: InboundHold
}

/**
 * Core's decisions during the storing transaction. They are synchronous callbacks because they
 * depend on the moment of the write: the timestamps follow commit order, and the recipients'
 * quota reservations (in memory, in core) turn into stored counts one by one, so a later copy
 * must see the earlier ones as stored and no longer reserved. Each store calls `begin` once
 * per attempt (the SQLite group commit may run a job a second time, alone, after a rollback).
 */
export interface InboundDecider<D extends InboundDelivery> {
  /** The start of an attempt: the periods the counters are bumped in. */
  begin(): InboundPeriods
  /**
   * Whether the delivery's admission must be checked again in the current periods (read from
   * the database only then).
   */
  recheckNeeded(delivery: D): boolean
  /** With the counts and limits in the current periods: whether the copy may still be stored. */
  recheck(delivery: D, facts: AdmissionFacts): boolean
  /** The copy's received_at and expires_at, given the newest received_at already in its inbox. */
  times(delivery: D, newestInInbox: string | undefined): { receivedAt: string; expiresAt: string }
  /** The copy is written (not yet committed). */
  stored(delivery: D): void
  /** A delivery with a hold whose new period has no room: not stored, for this limit. */
  refused(delivery: D, code: InboundLimitCode, limit: number): void
}

export interface StoreInboundInput<D extends InboundDelivery> {
  message: InboundMessage
  /** One per inbox, no inbox twice. */
  deliveries: D[]
  decide: InboundDecider<D>
  /**
   * Called once the message's transaction has committed, before the sync that the answer
   * waits for, so that the caller can let the next large message start writing meanwhile.
   * Optional for an adapter whose commit is its sync (PostgreSQL calls nothing).
   */
  committed?: () => void
}

/** What one sweep batch of expired messages deleted. */
export interface ExpiredMessagesDeleted {
  /** The inbox of each message deleted (an inbox once per message). */
  inboxIds: string[]
}

/**
 * Whether the heartbeat write committed. 'busy': another writer held the lock at that moment
 * and the write was not waited for (SQLite: another process's write transaction; PostgreSQL:
 * another machine's transaction held the heartbeat row for longer than the probe waits).
 * 'failed': the write failed otherwise; the SQLite adapter has told its storage observer.
 */
export type HeartbeatProbe = { outcome: 'committed' } | { outcome: 'busy' } | { outcome: 'failed'; error: unknown }

export interface InboundStore {
  /**
   * RCPT TO's read: the active inbox with this local part (lowercase) and the counts and limit
   * overrides admission compares, in `periods`; null when no active inbox has it.
   */
  admissionFacts(localPart: string, periods: InboundPeriods): Promise<AdmissionFacts | null>

  /**
   * Stores one received message for each delivery whose inbox is still active, with its
   * contents, search text, raw source and attachments, and bumps the organisation's monthly
   * count and the inbox's and organisation's burst counts, all in one transaction; answers the
   * deliveries stored, in the order given (the 250 reply lists the ids in RCPT order), after
   * the commit is durable. SQLite and PostgreSQL alike: a job of the adapter's group commit.
   */
  storeMessage<D extends InboundDelivery>(input: StoreInboundInput<D>): Promise<D[]>

  /**
   * Deletes up to `limit` messages that expired at or before `now`, with their contents,
   * sources, search texts and attachments; safe when several sweepers run at once.
   */
  deleteExpiredMessages(now: string, limit: number): Promise<ExpiredMessagesDeleted>

  /** Deletes burst buckets that started before `before`. */
  deleteBurstBucketsBefore(before: string): Promise<void>

  /** Writes the heartbeat setting `name` = `value`; resolves once it is durable (SQLite: a job of the group commit). */
  recordHeartbeat(name: string, value: string): Promise<void>

  /** The /ready probe: a real write of the heartbeat that does not wait for another writer's lock. */
  probeHeartbeat(name: string, value: string): Promise<HeartbeatProbe>

  /** One read, so /health fails when the database cannot be read. */
  touch(): Promise<void>
}
