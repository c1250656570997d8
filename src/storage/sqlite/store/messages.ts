/**
 * The SQLite side of MessageStore (../../port/messages.ts). Listings are the hot path (every
 * test polls them): each combination of filters is built once per database as a prepared
 * statement with placeholders, because Drizzle's per-run SQL building was most of a list
 * read's CPU (bench/README.md). One connection and one thread: the synchronous statements of
 * an operation see one state of the database without a transaction of their own.
 */
import { and, asc, desc, eq, gt, gte, inArray, isNotNull, isNull, lt, or, sql, type SQL } from 'drizzle-orm'
import { summaryColumnsOf } from '../../columns.ts'
import { type FilterDialect, filterConditions as sharedFilterConditions } from '../../message-filters.ts'
import type { SQLiteColumn } from 'drizzle-orm/sqlite-core'
import {
  hasConsoleTerms,
  hasTextTerm,
  type FullMessageRows,
  type InboxListing,
  type MessageFilters,
  type MessagePosition,
  type MessageStore,
  type OrganizationSearch,
  type OwnedItem,
} from '../../port/messages.ts'
import { preparedPerDatabase } from '../../prepared.ts'
import type { MessageRow } from '../../rows.ts'
import {
  attachmentContents,
  attachments,
  inboxes,
  linkChecks,
  messageContents,
  messageSearchTexts,
  messageSources,
  messages,
  monthlyEmailUsage,
} from '../schema.ts'
import type { Db, Storage } from '../../types.ts'
import { transaction } from '../transaction.ts'

const summaryColumns = summaryColumnsOf(messages)

// ---- Filters, as SQL on `messages` (shared by the inbox listing and the organisation search).

/**
 * Subject or text contains `folded`: instr() is a plain,
 * case-sensitive substring test, so user input holds no wildcards.
 */
const textContains = (folded: unknown): SQL =>
  sql`(instr(${messages.searchSubject}, ${folded}) > 0 or exists (
    select 1 from ${messageSearchTexts}
    where ${messageSearchTexts.messageId} = ${messages.id} and instr(${messageSearchTexts.text}, ${folded}) > 0
  ))`

/** At least one attachment proper (an inline image of the HTML body does not count); reads attachments_by_message. */
const hasAttachment = (): SQL =>
  sql`exists (
    select 1 from ${attachments}
    where ${and(eq(attachments.messageId, messages.id), eq(attachments.disposition, 'attachment'))}
  )`

const subjectContains = (lowered: unknown): SQL => sql`instr(${messages.searchSubject}, ${lowered}) > 0`
const recipientContains = (lowered: unknown): SQL => sql`instr(${messages.toAddress}, ${lowered}) > 0`

/** Rows older than a position, newest first on (received_at, id); its parts may be values or placeholders. */
const olderThan = (at: SQLiteColumn, id: SQLiteColumn, position: { at: unknown; id: unknown }) =>
  or(lt(at, position.at), and(eq(at, position.at), lt(id, position.id)))

/** Rows strictly newer than a position on (received_at, id). */
const newerThan = (position: MessagePosition) =>
  or(gt(messages.receivedAt, position.at), and(eq(messages.receivedAt, position.at), gt(messages.id, position.id)))

/**
 * The shared filters (../../message-filters.ts) in SQLite's terms: instr() is a plain, case-sensitive substring test.
 */
const sqliteFilters: FilterDialect = {
  messages,
  contains: (column, needle) => sql`instr(${column}, ${needle}) > 0`,
  textContains,
  hasAttachment,
  falseValue: sql`0`,
}
const filterConditions = (f: MessageFilters) => sharedFilterConditions(sqliteFilters, f)

/** The console's listing with search-line terms, built per read (see MessageFilters). Newest first. */
function consoleListing(db: Db, listing: InboxListing) {
  const newest = db
    .select({ id: messages.id })
    .from(messages)
    .where(and(eq(messages.inboxId, listing.inboxId), gt(messages.expiresAt, listing.now)))
    .orderBy(desc(messages.receivedAt), desc(messages.id))
    .limit(listing.textWindow)
  return and(
    eq(messages.inboxId, listing.inboxId),
    gt(messages.expiresAt, listing.now),
    hasTextTerm(listing.filters) ? inArray(messages.id, newest) : undefined,
    ...filterConditions(listing.filters),
  )
}

// ---- One inbox's listing.

/** Which optional parts a listing has; each combination gets its own prepared statement. */
export type ListingShape = Record<
  | 'full'
  | 'cursor'
  | Exclude<keyof MessageFilters, 'senderContains' | 'unread' | 'largerThan' | 'smallerThan' | 'all' | 'none'>,
  boolean
>

const p = sql.placeholder

/**
 * The WHERE of one listing shape; parameters are placeholders filled at each run, except the
 * text window, a constant of the statement (part of its cache key) as it was before the port.
 */
function listingWhere(db: Db, shape: ListingShape, textWindow: number) {
  // A text search looks at the inbox's newest `textWindow` messages only.
  const newest = db
    .select({ id: messages.id })
    .from(messages)
    .where(and(eq(messages.inboxId, p('inboxId')), gt(messages.expiresAt, p('now'))))
    .orderBy(desc(messages.receivedAt), desc(messages.id))
    .limit(textWindow)
  return and(
    eq(messages.inboxId, p('inboxId')),
    gt(messages.expiresAt, p('now')),
    shape.subject ? subjectContains(p('subject')) : undefined,
    shape.sender ? eq(messages.searchSender, p('sender')) : undefined,
    shape.senderDomain ? eq(messages.searchSenderDomain, p('senderDomain')) : undefined,
    shape.receivedAfter ? gte(messages.receivedAt, p('receivedAfter')) : undefined,
    shape.receivedBefore ? lt(messages.receivedAt, p('receivedBefore')) : undefined,
    shape.text ? and(inArray(messages.id, newest), textContains(p('text'))) : undefined,
    shape.hasAttachment ? hasAttachment() : undefined,
    shape.recipient ? recipientContains(p('recipient')) : undefined,
    shape.cursor ? olderThan(messages.receivedAt, messages.id, { at: p('afterAt'), id: p('afterId') }) : undefined,
  )
}

const summarySelect = (db: Db, shape: ListingShape, textWindow: number) =>
  db
    .select(summaryColumns)
    .from(messages)
    .where(listingWhere(db, shape, textWindow))
    .orderBy(desc(messages.receivedAt), desc(messages.id))
    .limit(p('limit'))

const fullSelect = (db: Db, shape: ListingShape, textWindow: number) =>
  db
    .select()
    .from(messages)
    .where(listingWhere(db, shape, textWindow))
    .orderBy(desc(messages.receivedAt), desc(messages.id))
    .limit(p('limit'))

const noFilters: ListingShape = {
  full: false,
  cursor: false,
  subject: false,
  sender: false,
  senderDomain: false,
  receivedAfter: false,
  receivedBefore: false,
  text: false,
  hasAttachment: false,
  recipient: false,
}

/** The SQL of a summary listing with these parts, so a test can check its plan. */
export const listingSql = (db: Db, parts: Partial<ListingShape>, textWindow: number) =>
  summarySelect(db, { ...noFilters, ...parts }, textWindow).toSQL()

/** Built once per shape and database (see the file's comment). */
const summaryQueries = preparedPerDatabase(() => new Map<string, ReturnType<typeof buildSummary>>())
const fullQueries = preparedPerDatabase(() => new Map<string, ReturnType<typeof buildFull>>())
const buildSummary = (db: Db, shape: ListingShape, textWindow: number) => summarySelect(db, shape, textWindow).prepare()
const buildFull = (db: Db, shape: ListingShape, textWindow: number) => fullSelect(db, shape, textWindow).prepare()

function shapeOf(listing: InboxListing, full: boolean): ListingShape {
  const { filters } = listing
  return {
    full,
    cursor: listing.after !== undefined,
    subject: Boolean(filters.subject),
    sender: Boolean(filters.sender),
    senderDomain: Boolean(filters.senderDomain),
    receivedAfter: filters.receivedAfter !== undefined,
    receivedBefore: filters.receivedBefore !== undefined,
    text: Boolean(filters.text),
    hasAttachment: filters.hasAttachment === true,
    recipient: Boolean(filters.recipient),
  }
}

const keyOf = (shape: ListingShape, textWindow: number) =>
  `${Object.values(shape).map(Number).join('')}${shape.text ? `:${textWindow}` : ''}`

function cached<Q>(cache: Map<string, Q>, shape: ListingShape, textWindow: number, build: () => Q): Q {
  const key = keyOf(shape, textWindow)
  let prepared = cache.get(key)
  if (!prepared) {
    prepared = build()
    cache.set(key, prepared)
  }
  return prepared
}

const listingParameters = ({ inboxId, now, filters, after, limit }: InboxListing) => ({
  inboxId,
  now,
  subject: filters.subject,
  sender: filters.sender,
  senderDomain: filters.senderDomain,
  receivedAfter: filters.receivedAfter,
  receivedBefore: filters.receivedBefore,
  text: filters.text,
  recipient: filters.recipient,
  afterAt: after?.at,
  afterId: after?.id,
  limit,
})

// ---- Full messages.

// Full messages are read one at a time (getMessage, or a listing with include=content and
// limit=1), on the path from commit to a woken long poll's answer: prepared once, these
// skip Drizzle's SQL building, about half of the read's time (bench/README.md).
const contentQueries = preparedPerDatabase((db) => {
  const messageId = p('messageId')
  return {
    content: db.select().from(messageContents).where(eq(messageContents.messageId, messageId)).prepare(),
    attachments: db
      .select()
      .from(attachments)
      .where(eq(attachments.messageId, messageId))
      .orderBy(asc(attachments.position))
      .prepare(),
  }
})

function withContent(db: Db, rows: MessageRow[]): FullMessageRows[] {
  const queries = contentQueries(db)
  return rows.map((message) => ({
    message,
    // Written in the same transaction as the message, so it is always there.
    content: queries.content.get({ messageId: message.id })!,
    attachments: queries.attachments.all({ messageId: message.id }),
  }))
}

/** The organisation's unexpired message row, or undefined. */
const findOwned = (db: Db, { organizationId, id, now }: OwnedItem) =>
  db
    .select()
    .from(messages)
    .where(and(eq(messages.id, id), eq(messages.organizationId, organizationId), gt(messages.expiresAt, now)))
    .get()

// ---- The console's page position and marks, read on every live refresh: prepared once.

const consoleQueries = preparedPerDatabase((db) => {
  // Placeholders stand where newerThan takes the cursor's values: they are bound when the statement runs.
  const newerCursor = { at: p('newerAt') as unknown as string, id: p('newerId') as unknown as string }
  const counted = db
    .select({
      newer: sql<number>`(${p('hasNewer')} and ${newerThan(newerCursor)})`.as('newer'),
      unread: sql<number>`(${messages.readAt} is null)`.as('unread'),
    })
    .from(messages)
    .where(and(eq(messages.inboxId, p('inboxId')), gt(messages.expiresAt, p('now'))))
    .orderBy(desc(messages.receivedAt), desc(messages.id))
    .limit(p('limit'))
    .as('counted')
  return {
    count: db
      .select({
        total: sql<number>`count(*)`,
        newer: sql<number>`coalesce(sum(${counted.newer}), 0)`,
        unread: sql<number>`coalesce(sum(${counted.unread}), 0)`,
      })
      .from(counted)
      .prepare(),
    // The page's ids as one JSON array parameter: one statement whatever the page size.
    marks: db
      .select({ id: messages.id, read: sql<number>`${messages.readAt} is not null`, hasAttachment: hasAttachment() })
      .from(messages)
      .where(
        and(
          sql`${messages.id} in (select value from json_each(${p('ids')}))`,
          eq(messages.organizationId, p('organizationId')),
        ),
      )
      .prepare(),
  }
})

// ---- The organisation search.

/** The search's query (exported so a test can check its plan). */
export function searchSelect(db: Db, { organizationId, now, filters, window, after, limit }: OrganizationSearch) {
  const newest = db
    .select({ id: messages.id })
    .from(messages)
    .where(and(eq(messages.organizationId, organizationId), gt(messages.expiresAt, now)))
    .orderBy(desc(messages.receivedAt), desc(messages.id))
    .limit(window)
  const active = db
    .select({ id: inboxes.id })
    .from(inboxes)
    .where(and(eq(inboxes.organizationId, organizationId), eq(inboxes.state, 'active')))
  return db
    .select(summaryColumns)
    .from(messages)
    .where(
      and(
        inArray(messages.id, newest),
        inArray(messages.inboxId, active),
        ...filterConditions(filters),
        after ? olderThan(messages.receivedAt, messages.id, after) : undefined,
      ),
    )
    .orderBy(desc(messages.receivedAt), desc(messages.id))
    .limit(limit)
}

// ---- Usage.

// Prepared once: getUsage reads it on every call, and the console's pages show it.
const receivedInMonth = preparedPerDatabase((db) =>
  db
    .select({ received: monthlyEmailUsage.received })
    .from(monthlyEmailUsage)
    .where(and(eq(monthlyEmailUsage.organizationId, p('organizationId')), eq(monthlyEmailUsage.month, p('month'))))
    .prepare(),
)

/** Messages stored for the organisation in the month 'YYYY-MM' (committed ones only). */
const emailsReceivedIn = (db: Db, organizationId: string, month: string): number =>
  receivedInMonth(db).get({ organizationId, month })?.received ?? 0

export function sqliteMessages(storage: Storage): MessageStore {
  const { db } = storage
  return {
    async listInbox(listing) {
      if (listing.before) {
        // "Newer": the nearest rows above the position, read upwards, then turned newest first.
        const rows = db
          .select(summaryColumns)
          .from(messages)
          .where(and(consoleListing(db, listing), newerThan(listing.before)))
          .orderBy(asc(messages.receivedAt), asc(messages.id))
          .limit(listing.limit)
          .all()
        return rows.reverse()
      }
      if (hasConsoleTerms(listing.filters)) {
        return db
          .select(summaryColumns)
          .from(messages)
          .where(
            and(
              consoleListing(db, listing),
              listing.after ? olderThan(messages.receivedAt, messages.id, listing.after) : undefined,
            ),
          )
          .orderBy(desc(messages.receivedAt), desc(messages.id))
          .limit(listing.limit)
          .all()
      }
      const shape = shapeOf(listing, false)
      return cached(summaryQueries(db), shape, listing.textWindow, () =>
        buildSummary(db, shape, listing.textWindow),
      ).all(listingParameters(listing))
    },

    async listInboxWithContent(listing, contentOf) {
      const shape = shapeOf(listing, true)
      const rows = cached(fullQueries(db), shape, listing.textWindow, () =>
        buildFull(db, shape, listing.textWindow),
      ).all(listingParameters(listing))
      return { rows, full: withContent(db, rows.slice(0, contentOf)) }
    },

    async getFull(item) {
      const row = findOwned(db, item)
      return row ? withContent(db, [row])[0]! : null
    },

    async getSource(item) {
      const row = findOwned(db, item)
      if (!row) return null
      // Written in the same transaction as the message, so it is always there.
      return db
        .select({ raw: messageSources.raw, sha256: messageSources.sha256 })
        .from(messageSources)
        .where(eq(messageSources.messageId, row.id))
        .get()!
    },

    async delete(item) {
      // Found before the write, as the verb always did: an unknown id answers without taking
      // the write lock (and without meeting a read-only volume). Nothing runs in between.
      const row = findOwned(db, item)
      if (!row) return null
      transaction(storage, (tx) => tx.delete(messages).where(eq(messages.id, row.id)).run())
      return { inboxId: row.inboxId }
    },

    async getAttachment({ organizationId, id, now }) {
      return (
        db
          .select({
            filename: attachments.filename,
            contentType: attachments.contentType,
            content: attachmentContents.content,
            sha256: attachmentContents.sha256,
          })
          .from(attachments)
          .innerJoin(attachmentContents, eq(attachmentContents.attachmentId, attachments.id))
          .innerJoin(messages, eq(messages.id, attachments.messageId))
          .where(
            and(eq(attachments.id, id), eq(attachments.organizationId, organizationId), gt(messages.expiresAt, now)),
          )
          .get() ?? null
      )
    },

    async searchOrganization(search) {
      return searchSelect(db, search).all()
    },

    async countInbox(listing, newer) {
      // The unfiltered list (every live refresh of an inbox page): one prepared statement.
      if (Object.values(listing.filters).every((value) => value === undefined)) {
        const far = { at: '', id: '' } // before every row: nothing is newer than "no page"
        return consoleQueries(db).count.get({
          inboxId: listing.inboxId,
          now: listing.now,
          limit: listing.limit,
          newerAt: newer?.at ?? far.at,
          newerId: newer?.id ?? far.id,
          hasNewer: newer ? 1 : 0,
        })!
      }
      // The newest `limit` matches, walked down messages_by_inbox_newest, then counted.
      const counted = db
        .select({
          newer: (newer ? sql<number>`(${newerThan(newer)})` : sql<number>`0`).as('newer'),
          unread: sql<number>`(${messages.readAt} is null)`.as('unread'),
        })
        .from(messages)
        .where(consoleListing(db, listing))
        .orderBy(desc(messages.receivedAt), desc(messages.id))
        .limit(listing.limit)
        .as('counted')
      return db
        .select({
          total: sql<number>`count(*)`,
          newer: sql<number>`coalesce(sum(${counted.newer}), 0)`,
          unread: sql<number>`coalesce(sum(${counted.unread}), 0)`,
        })
        .from(counted)
        .get()!
    },

    async saveLinkCheck(row) {
      transaction(storage, (tx) => tx.insert(linkChecks).values(row).run())
    },

    async getLinkCheck({ organizationId, id, now }) {
      return (
        db
          .select({
            id: linkChecks.id,
            messageId: linkChecks.messageId,
            createdAt: linkChecks.createdAt,
            resultsJson: linkChecks.resultsJson,
          })
          .from(linkChecks)
          .innerJoin(messages, eq(messages.id, linkChecks.messageId))
          .where(and(eq(linkChecks.id, id), eq(linkChecks.organizationId, organizationId), gt(messages.expiresAt, now)))
          .get() ?? null
      )
    },

    async inInbox({ organizationId, inboxId, ids, now }) {
      if (ids.length === 0) return []
      return db
        .select({ id: messages.id })
        .from(messages)
        .where(
          and(
            inArray(messages.id, ids),
            eq(messages.organizationId, organizationId),
            eq(messages.inboxId, inboxId),
            gt(messages.expiresAt, now),
          ),
        )
        .all()
        .map((row) => row.id)
    },

    async marks({ organizationId, ids }) {
      if (ids.length === 0) return []
      return consoleQueries(db)
        .marks.all({ organizationId, ids: JSON.stringify(ids) })
        .map((row) => ({ id: row.id, read: Boolean(row.read), hasAttachment: Boolean(row.hasAttachment) }))
    },

    async markRead({ organizationId, ids, at }) {
      if (ids.length === 0) return 0
      return transaction(storage, (tx) =>
        tx
          .update(messages)
          .set({ readAt: at })
          // Marking read keeps the first time a message was read; unread clears it.
          .where(
            and(
              inArray(messages.id, ids),
              eq(messages.organizationId, organizationId),
              at === null ? isNotNull(messages.readAt) : isNull(messages.readAt),
            ),
          )
          .returning({ id: messages.id })
          .all(),
      ).length
    },

    async usage({ organizationId, month }) {
      const activeInboxes = db
        .select({ n: sql<number>`count(*)` })
        .from(inboxes)
        .where(and(eq(inboxes.organizationId, organizationId), eq(inboxes.state, 'active')))
        .get()!.n
      return { activeInboxes, emailsReceived: emailsReceivedIn(db, organizationId, month) }
    },
  }
}
