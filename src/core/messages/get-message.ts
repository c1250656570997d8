import { and, eq, gt } from 'drizzle-orm'
import { isoTime } from '../../clock.ts'
import { ID_PATTERNS } from '../../ids.ts'
import { messageSources, messages } from '../../storage/schema.ts'
import type { Principal } from '../api-keys/authenticate.ts'
import { DomainError } from '../errors.ts'
import type { Message } from '../models.ts'
import type { Services } from '../services.ts'
import { transaction } from '../transaction.ts'
import { verifiedBytes } from '../stored-bytes.ts'
import { presentFull } from './present.ts'

const notFound = () => new DomainError('message_not_found', 'No message with this id.')

/** The caller's unexpired message row, or 404 (unknown, deleted, expired and foreign ids alike). */
function findMessage(s: Services, principal: Principal, messageId: string): typeof messages.$inferSelect {
  const row = ID_PATTERNS.msg.test(messageId)
    ? s.storage.db
        .select()
        .from(messages)
        .where(and(eq(messages.id, messageId), eq(messages.organizationId, principal.organizationId), gt(messages.expiresAt, isoTime(s.clock.now()))))
        .get()
    : undefined
  if (!row) throw notFound()
  return row
}

export function getMessage(s: Services, principal: Principal, messageId: string): Message {
  return presentFull(s.storage.db, [findMessage(s, principal, messageId)], s.publicUrls().filesUrl)[0]!
}

/** Deletes the message with its source and attachments (cascade). Monthly usage is kept. */
export function deleteMessage(s: Services, principal: Principal, messageId: string): void {
  const row = findMessage(s, principal, messageId)
  s.disk.freeing(() =>
    transaction(s, (tx) => {
      tx.delete(messages).where(eq(messages.id, row.id)).run()
      s.notifier.bump(row.inboxId)
    }),
  )
}

/** The message exactly as received over SMTP (the bytes a `.eml` download serves), checked against its SHA-256. */
export function getMessageSource(s: Services, principal: Principal, messageId: string): Buffer {
  const row = findMessage(s, principal, messageId)
  // Written in the same transaction as the message, so it is always there.
  const source = s.storage.db.select({ raw: messageSources.raw, sha256: messageSources.sha256 }).from(messageSources).where(eq(messageSources.messageId, row.id)).get()!
  return verifiedBytes(s, 'message_source', row.id, source.raw, source.sha256)
}
