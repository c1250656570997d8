/**
 * The PostgreSQL side of MessageStore (../../port/messages.ts).
 *
 * Matching is SQLite's exactly: the filters compare the stored lowercase search copies with
 * values core has already lowercased, through strpos() (SQLite's instr()), a plain
 * case-sensitive substring test, so neither dialect treats `%` or `_` in user input as a
 * wildcard. Ordering is (received_at, id) descending; ids are lowercase hex, which every
 * collation orders as bytes, so ties fall the same way as in SQLite.
 *
 * A full message (its row, content and attachments) is read in one statement, so a delete
 * committed on another machine meanwhile cannot leave half a message. A delete is one
 * conditional statement, so two machines deleting the same message see exactly one success.
 */
import { and, asc, desc, eq, getTableColumns, gt, inArray, isNotNull, isNull, lt, or, sql, type SQL } from 'drizzle-orm'
import { summaryColumnsOf } from '../../columns.ts'
import { type FilterDialect, filterConditions as sharedFilterConditions } from '../../message-filters.ts'
import type { PgColumn } from 'drizzle-orm/pg-core'
import {
  hasTextTerm,
  type FullMessageRows,
  type InboxListing,
  type MessageFilters,
  type MessagePosition,
  type MessageStore,
  type OwnedItem,
} from '../../port/messages.ts'
import type { AttachmentRow, MessageRow } from '../../rows.ts'
import type { PostgresDb, PostgresDbOrTx } from '../db.ts'
import {
  attachmentContents,
  attachments,
  decodeMailText,
  encodeMailText,
  inboxes,
  linkChecks,
  messageContents,
  messageSearchTexts,
  messageSources,
  messages,
  monthlyEmailUsage,
} from '../schema.ts'

const summaryColumns = summaryColumnsOf(messages)

/**
 * Stored bytes (a source, an attachment) are read in slices, each its own statement.
 * postgres.js takes a value in whole and turns it from text into bytes in one go: a 5 MiB
 * attachment was a 10 MiB hex row joined, decoded and copied in one task of about 30 ms on
 * the event loop, which every other request on the machine (another organisation's among
 * them) waited behind. A slice is a short task, and the pool connection goes back between
 * slices. base64 (PostgreSQL's `encode`) is a third of the text hex would be. Stored bytes
 * are never updated, only deleted with their row: a slice that finds no row means the row
 * went meanwhile, and the read answers as if it had not been found.
 */
const SLICE_BYTES = 512 * 1024

const slice = (column: PgColumn, from: number) =>
  sql<string>`encode(substring(${column} from ${from} for ${SLICE_BYTES}), 'base64')`
const firstSlice = (column: PgColumn) => slice(column, 1)

/**
 * The whole value from its first slice and `rest(from)` (1-based,
 * as `substring`) for each further one; null when the row went.
 */
async function readInSlices(
  first: { first: string; length: number },
  rest: (from: number) => Promise<{ slice: string }[]>,
): Promise<Buffer | null> {
  const bytes = Buffer.allocUnsafe(first.length)
  let filled = bytes.write(first.first, 0, 'base64')
  while (filled < first.length) {
    const [row] = await rest(filled + 1)
    const written = row ? bytes.write(row.slice, filled, 'base64') : 0
    if (written === 0) return null
    filled += written
  }
  return bytes
}

const REGEX_SPECIAL = /[\\^$.|?*+()[\]{}]/g

/**
 * The needle is escaped as the mail text columns are (schema.ts), so a NUL or a U+FFFF in it
 * matches exactly what SQLite matches. A needle that begins with '0' or '1' could also match
 * the second half of an escape (U+FFFF '0' stands for NUL): it must not follow a U+FFFF, which
 * in stored text only ever begins an escape.
 */
const contains = (column: PgColumn, value: string): SQL => {
  const needle = encodeMailText(value)
  if (!needle.startsWith('0') && !needle.startsWith('1')) return sql`strpos(${column}, ${needle}) > 0`
  return sql`${column} ~ ${`(?:^|[^\uffff])${needle.replace(REGEX_SPECIAL, '\\$&')}`}`
}

const textContains = (folded: string): SQL =>
  sql`(${contains(messages.searchSubject, folded)} or exists (
    select 1 from ${messageSearchTexts}
    where ${messageSearchTexts.messageId} = ${messages.id} and ${contains(messageSearchTexts.text, folded)}
  ))`

/** At least one attachment proper (an inline image of the HTML body does not count). */
const hasAttachment = (): SQL =>
  sql`exists (
    select 1 from ${attachments}
    where ${and(eq(attachments.messageId, messages.id), eq(attachments.disposition, 'attachment'))}
  )`

const olderThan = (after: { at: string; id: string }) =>
  or(lt(messages.receivedAt, after.at), and(eq(messages.receivedAt, after.at), lt(messages.id, after.id)))
const newerThan = (before: MessagePosition) =>
  or(gt(messages.receivedAt, before.at), and(eq(messages.receivedAt, before.at), gt(messages.id, before.id)))

/**
 * The shared filters (../../message-filters.ts) in PostgreSQL's terms: `contains` matches the
 * escaped mail text exactly as SQLite's instr() matches the raw text.
 */
const postgresFilters: FilterDialect = {
  messages,
  contains: (column, needle) => contains(column as PgColumn, needle),
  textContains,
  hasAttachment,
  falseValue: sql`false`,
}
/** Every filter, `text` included; the caller bounds a read with a text term to its window (hasTextTerm). */
const filterConditions = (filters: MessageFilters) => sharedFilterConditions(postgresFilters, filters)

function listingWhere(db: PostgresDbOrTx, { inboxId, now, filters, textWindow, after, before }: InboxListing) {
  // A text search looks at the inbox's newest `textWindow` messages only, as in SQLite.
  const newest = db
    .select({ id: messages.id })
    .from(messages)
    .where(and(eq(messages.inboxId, inboxId), gt(messages.expiresAt, now)))
    .orderBy(desc(messages.receivedAt), desc(messages.id))
    .limit(textWindow)
  return and(
    eq(messages.inboxId, inboxId),
    gt(messages.expiresAt, now),
    ...filterConditions(filters),
    hasTextTerm(filters) ? inArray(messages.id, newest) : undefined,
    after ? olderThan(after) : undefined,
    before ? newerThan(before) : undefined,
  )
}

/** An attachment row as json_build_object in withContent writes it: mail text still escaped. */
interface AttachmentJson {
  id: string
  messageId: string
  organizationId: string
  position: number
  filename: string
  contentType: string
  sizeBytes: number
  disposition: 'attachment' | 'inline'
  contentId: string | null
}

const attachmentFromJson = (a: AttachmentJson): AttachmentRow => ({
  ...a,
  filename: decodeMailText(a.filename),
  contentType: decodeMailText(a.contentType),
  sizeBytes: Number(a.sizeBytes),
  contentId: a.contentId === null ? null : decodeMailText(a.contentId),
})

/**
 * The messages matching `where` (newest first, at most `limit`) and, for the first `contentOf`
 * of them, their content and attachments: ONE statement, so one snapshot of the database
 * without a transaction (a delete committed meanwhile cannot leave half a message) and one
 * round trip, which is most of what a woken long poll with include=content waits for. The
 * attachments come as one JSON array per message, in position order.
 */
async function withContent(
  db: PostgresDbOrTx,
  where: SQL | undefined,
  limit: number,
  contentOf: number,
): Promise<{ rows: MessageRow[]; full: FullMessageRows[] }> {
  const firsts = db
    .select({ id: messages.id })
    .from(messages)
    .where(where)
    .orderBy(desc(messages.receivedAt), desc(messages.id))
    .limit(contentOf)
  const attachmentsJson = sql<
    AttachmentJson[] | string | null
  >`case when ${messageContents.messageId} is null then null else (
    select coalesce(json_agg(json_build_object(
      'id', a.id, 'messageId', a.message_id, 'organizationId', a.organization_id, 'position', a.position,
      'filename', a.filename, 'contentType', a.content_type, 'sizeBytes', a.size_bytes,
      'disposition', a.disposition, 'contentId', a.content_id
    ) order by a.position), '[]'::json) from ${attachments} a where a.message_id = ${messages.id}) end`
  const found = await db
    .select({
      message: getTableColumns(messages),
      contentMessageId: messageContents.messageId,
      textBody: messageContents.textBody,
      htmlBody: messageContents.htmlBody,
      headersJson: messageContents.headersJson,
      attachments: attachmentsJson,
    })
    .from(messages)
    .leftJoin(
      messageContents,
      and(eq(messageContents.messageId, messages.id), inArray(messageContents.messageId, firsts)),
    )
    .where(where)
    .orderBy(desc(messages.receivedAt), desc(messages.id))
    .limit(limit)
  const full: FullMessageRows[] = []
  for (const row of found) {
    // Written in the same transaction as the message, so there whenever the message is.
    if (row.contentMessageId === null || row.headersJson === null) continue
    const parts =
      typeof row.attachments === 'string' ? (JSON.parse(row.attachments) as AttachmentJson[]) : (row.attachments ?? [])
    full.push({
      message: row.message,
      content: {
        messageId: row.contentMessageId,
        textBody: row.textBody,
        htmlBody: row.htmlBody,
        headersJson: row.headersJson,
      },
      attachments: parts.map(attachmentFromJson),
    })
  }
  return { rows: found.map((row) => row.message), full }
}

const ownedWhere = ({ organizationId, id, now }: OwnedItem) =>
  and(eq(messages.id, id), eq(messages.organizationId, organizationId), gt(messages.expiresAt, now))

export function postgresMessages(db: PostgresDb): MessageStore {
  return {
    async listInbox(listing) {
      if (listing.before) {
        // "Newer": the nearest rows above the position, read upwards, then turned newest first.
        const rows = await db
          .select(summaryColumns)
          .from(messages)
          .where(listingWhere(db, listing))
          .orderBy(asc(messages.receivedAt), asc(messages.id))
          .limit(listing.limit)
        return rows.reverse()
      }
      return db
        .select(summaryColumns)
        .from(messages)
        .where(listingWhere(db, listing))
        .orderBy(desc(messages.receivedAt), desc(messages.id))
        .limit(listing.limit)
    },

    async listInboxWithContent(listing, contentOf) {
      return withContent(db, listingWhere(db, listing), listing.limit, contentOf)
    },

    async getFull(item) {
      const { full } = await withContent(db, ownedWhere(item), 1, 1)
      return full[0] ?? null
    },

    async getSource(item) {
      // One statement for the message's visibility, its hash and the first slice of its source.
      const [row] = await db
        .select({
          first: firstSlice(messageSources.raw),
          length: sql<number>`octet_length(${messageSources.raw})`.mapWith(Number),
          sha256: messageSources.sha256,
        })
        .from(messageSources)
        .innerJoin(messages, eq(messages.id, messageSources.messageId))
        .where(ownedWhere(item))
        .limit(1)
      if (!row) return null
      const raw = await readInSlices(row, (from) =>
        db
          .select({ slice: slice(messageSources.raw, from) })
          .from(messageSources)
          .where(eq(messageSources.messageId, item.id)),
      )
      return raw && { raw, sha256: row.sha256 }
    },

    async delete(item) {
      // A conditional delete: of two machines deleting the same message, exactly one gets its row back.
      const [row] = await db.delete(messages).where(ownedWhere(item)).returning({ inboxId: messages.inboxId })
      return row ?? null
    },

    async getAttachment({ organizationId, id, now }) {
      const [row] = await db
        .select({
          filename: attachments.filename,
          contentType: attachments.contentType,
          first: firstSlice(attachmentContents.content),
          length: sql<number>`octet_length(${attachmentContents.content})`.mapWith(Number),
          sha256: attachmentContents.sha256,
        })
        .from(attachments)
        .innerJoin(attachmentContents, eq(attachmentContents.attachmentId, attachments.id))
        .innerJoin(messages, eq(messages.id, attachments.messageId))
        .where(and(eq(attachments.id, id), eq(attachments.organizationId, organizationId), gt(messages.expiresAt, now)))
        .limit(1)
      if (!row) return null
      const content = await readInSlices(row, (from) =>
        db
          .select({ slice: slice(attachmentContents.content, from) })
          .from(attachmentContents)
          .where(eq(attachmentContents.attachmentId, id)),
      )
      return content && { filename: row.filename, contentType: row.contentType, content, sha256: row.sha256 }
    },

    async searchOrganization({ organizationId, now, filters, window, after, limit }) {
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
            after ? olderThan(after) : undefined,
          ),
        )
        .orderBy(desc(messages.receivedAt), desc(messages.id))
        .limit(limit)
    },

    async countInbox(listing, newer) {
      // The newest `limit` matches, walked down messages_by_inbox_newest, then counted.
      const counted = db
        .select({
          newer: (newer ? sql<boolean>`(${newerThan(newer)})` : sql<boolean>`false`).as('newer'),
          unread: sql<boolean>`(${messages.readAt} is null)`.as('unread'),
        })
        .from(messages)
        .where(listingWhere(db, listing))
        .orderBy(desc(messages.receivedAt), desc(messages.id))
        .limit(listing.limit)
        .as('counted')
      const [row] = await db
        .select({
          total: sql<number>`count(*)::int`,
          newer: sql<number>`(count(*) filter (where ${counted.newer}))::int`,
          unread: sql<number>`(count(*) filter (where ${counted.unread}))::int`,
        })
        .from(counted)
      return { total: Number(row!.total), newer: Number(row!.newer), unread: Number(row!.unread) }
    },

    async saveLinkCheck(row) {
      await db.insert(linkChecks).values(row)
    },

    async getLinkCheck({ organizationId, id, now }) {
      const [row] = await db
        .select({
          id: linkChecks.id,
          messageId: linkChecks.messageId,
          createdAt: linkChecks.createdAt,
          resultsJson: linkChecks.resultsJson,
        })
        .from(linkChecks)
        .innerJoin(messages, eq(messages.id, linkChecks.messageId))
        .where(and(eq(linkChecks.id, id), eq(linkChecks.organizationId, organizationId), gt(messages.expiresAt, now)))
        .limit(1)
      return row ?? null
    },

    async inInbox({ organizationId, inboxId, ids, now }) {
      if (ids.length === 0) return []
      const rows = await db
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
      return rows.map((row) => row.id)
    },

    async marks({ organizationId, ids }) {
      if (ids.length === 0) return []
      return db
        .select({
          id: messages.id,
          read: sql<boolean>`${messages.readAt} is not null`,
          hasAttachment: sql<boolean>`${hasAttachment()}`,
        })
        .from(messages)
        .where(and(inArray(messages.id, ids), eq(messages.organizationId, organizationId)))
    },

    async markRead({ organizationId, ids, at }) {
      if (ids.length === 0) return 0
      const changed = await db
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
      return changed.length
    },

    async usage({ organizationId, month }) {
      // One statement, so both numbers are of one snapshot.
      const activeInboxes = db
        .select({ n: sql`count(*)` })
        .from(inboxes)
        .where(and(eq(inboxes.organizationId, organizationId), eq(inboxes.state, 'active')))
      const received = db
        .select({ received: monthlyEmailUsage.received })
        .from(monthlyEmailUsage)
        .where(and(eq(monthlyEmailUsage.organizationId, organizationId), eq(monthlyEmailUsage.month, month)))
      const [row] = await db
        .select({
          activeInboxes: sql<number>`(${activeInboxes})::int`,
          emailsReceived: sql<number>`coalesce((${received}), 0)::int`,
        })
        .from(sql`(select 1) as one`)
      return { activeInboxes: Number(row!.activeInboxes), emailsReceived: Number(row!.emailsReceived) }
    },
  }
}
