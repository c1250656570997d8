/**
 * The statements every inbound message runs (RCPT checks and the store transaction),
 * built once per database as prepared queries. Drizzle otherwise rebuilds each one's SQL
 * from its builder objects on every run, a large share of the server's CPU per message
 * (bench/README.md). bun:sqlite has one connection per database, so
 * these run inside the store's write transaction like any `tx` query would.
 */
import { and, desc, eq, sql } from 'drizzle-orm'
import { preparedPerDatabase } from '../../prepared.ts'
import {
  attachmentContents,
  attachments,
  inboundBursts,
  inboxes,
  messageContents,
  messageSearchTexts,
  messageSources,
  messages,
  monthlyEmailUsage,
  organizations,
  settings,
} from '../schema.ts'

const p = sql.placeholder

const columnsOf = <T extends Record<string, unknown>>(names: readonly (keyof T & string)[]) =>
  Object.fromEntries(names.map((name) => [name, p(name)])) as Record<keyof T & string, ReturnType<typeof p>>

const MESSAGE_COLUMNS = [
  'id',
  'inboxId',
  'organizationId',
  'fromName',
  'fromAddress',
  'toAddress',
  'subject',
  'preview',
  'sizeBytes',
  'receivedAt',
  'expiresAt',
  'searchSubject',
  'searchSender',
  'searchSenderDomain',
  'internetMessageId',
] as const satisfies readonly (keyof typeof messages.$inferInsert)[]

const ATTACHMENT_COLUMNS = [
  'id',
  'messageId',
  'organizationId',
  'position',
  'filename',
  'contentType',
  'sizeBytes',
  'disposition',
  'contentId',
] as const satisfies readonly (keyof typeof attachments.$inferInsert)[]

export const inboundStatements = preparedPerDatabase((db) => ({
  activeInboxByLocalPart: db
    .select({ id: inboxes.id, organizationId: inboxes.organizationId })
    .from(inboxes)
    .where(and(eq(inboxes.localPart, p('localPart')), eq(inboxes.state, 'active')))
    .prepare(),
  activeInboxAddress: db
    .select({ address: inboxes.address })
    .from(inboxes)
    .where(and(eq(inboxes.id, p('inboxId')), eq(inboxes.state, 'active')))
    .prepare(),
  limitOverrides: db
    .select({
      monthlyEmails: organizations.limitMonthlyEmails,
      inboxBurst: organizations.limitInboxBurst,
      orgBurst: organizations.limitOrgBurst,
    })
    .from(organizations)
    .where(eq(organizations.id, p('organizationId')))
    .prepare(),
  receivedInMonth: db
    .select({ received: monthlyEmailUsage.received })
    .from(monthlyEmailUsage)
    .where(and(eq(monthlyEmailUsage.organizationId, p('organizationId')), eq(monthlyEmailUsage.month, p('month'))))
    .prepare(),
  acceptedInBucket: db
    .select({ accepted: inboundBursts.accepted })
    .from(inboundBursts)
    .where(and(eq(inboundBursts.subjectId, p('subjectId')), eq(inboundBursts.bucketStartsAt, p('bucket'))))
    .prepare(),
  // The newest received_at in an inbox (index messages_by_inbox_newest): see received-at.ts.
  newestReceivedAt: db
    .select({ at: messages.receivedAt })
    .from(messages)
    .where(eq(messages.inboxId, p('inboxId')))
    .orderBy(desc(messages.receivedAt))
    .limit(1)
    .prepare(),
  insertMessage: db.insert(messages).values(columnsOf<typeof messages.$inferInsert>(MESSAGE_COLUMNS)).prepare(),
  insertContent: db
    .insert(messageContents)
    .values({
      messageId: p('messageId'),
      textBody: p('textBody'),
      htmlBody: p('htmlBody'),
      headersJson: p('headersJson'),
    })
    .prepare(),
  insertSearchText: db
    .insert(messageSearchTexts)
    .values({ messageId: p('messageId'), text: p('text') })
    .prepare(),
  insertSource: db
    .insert(messageSources)
    .values({ messageId: p('messageId'), raw: p('raw'), sha256: p('sha256') })
    .prepare(),
  insertAttachment: db
    .insert(attachments)
    .values(columnsOf<typeof attachments.$inferInsert>(ATTACHMENT_COLUMNS))
    .prepare(),
  insertAttachmentContent: db
    .insert(attachmentContents)
    .values({ attachmentId: p('attachmentId'), content: p('content'), sha256: p('sha256') })
    .prepare(),
  countMonthlyEmail: db
    .insert(monthlyEmailUsage)
    .values({ organizationId: p('organizationId'), month: p('month'), received: 1 })
    .onConflictDoUpdate({
      target: [monthlyEmailUsage.organizationId, monthlyEmailUsage.month],
      set: { received: sql`${monthlyEmailUsage.received} + 1` },
    })
    .prepare(),
  bumpBurst: db
    .insert(inboundBursts)
    .values({ subjectId: p('subjectId'), bucketStartsAt: p('bucket'), accepted: 1 })
    .onConflictDoUpdate({
      target: [inboundBursts.subjectId, inboundBursts.bucketStartsAt],
      set: { accepted: sql`${inboundBursts.accepted} + 1` },
    })
    .prepare(),
  writeSetting: db
    .insert(settings)
    .values({ name: p('name'), value: p('value') })
    .onConflictDoUpdate({ target: settings.name, set: { value: sql`excluded.value` } })
    .prepare(),
}))
