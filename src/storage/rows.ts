/**
 * The row shapes the port speaks in, in both dialects: those of the SQLite schema, which the
 * PostgreSQL adapter returns too (its timestamps read back as RFC 3339 strings, sizes as
 * numbers, bytes as Buffers; test/postgres/postgres.round-trip.test.ts holds it to that).
 */
import type * as schema from './sqlite/schema.ts'

export type OrganizationRow = typeof schema.organizations.$inferSelect
export type ApiKeyRow = typeof schema.apiKeys.$inferSelect
export type InboxRow = typeof schema.inboxes.$inferSelect
export type MessageRow = typeof schema.messages.$inferSelect
export type MessageContentRow = typeof schema.messageContents.$inferSelect
export type AttachmentRow = typeof schema.attachments.$inferSelect
export type UserRow = typeof schema.users.$inferSelect
export type SessionRow = typeof schema.sessions.$inferSelect
export type MembershipRow = typeof schema.memberships.$inferSelect
export type InviteRow = typeof schema.invites.$inferSelect
export type AuditEventRow = typeof schema.auditEvents.$inferSelect
