import { isoTime } from '../../clock.ts'
import { ID_PATTERNS } from '../../ids.ts'
import type { OwnedItem } from '../../storage/port/messages.ts'
import type { Principal } from '../api-keys/authenticate.ts'
import { DomainError } from '../common/errors.ts'
import type { Message } from '../common/models.ts'
import type { Services } from '../common/services.ts'
import { verifiedBytes } from '../common/stored-bytes.ts'
import { presentFull } from './present.ts'

const notFound = () => new DomainError('message_not_found', 'No message with this id.')

/**
 * The caller's message as of now; null for an id that cannot be
 * one (unknown, deleted, expired and foreign ids all end as 404).
 */
const ownedMessage = (s: Services, principal: Principal, messageId: string): OwnedItem | null =>
  ID_PATTERNS.msg.test(messageId)
    ? { organizationId: principal.organizationId, id: messageId, now: isoTime(s.clock.now()) }
    : null

export async function getMessage(s: Services, principal: Principal, messageId: string): Promise<Message> {
  const item = ownedMessage(s, principal, messageId)
  const rows = item && (await s.store.messages.getFull(item))
  if (!rows) throw notFound()
  return presentFull(rows, s.publicUrls().filesUrl)
}

/** Deletes the message with its source and attachments (cascade). Monthly usage is kept. */
export async function deleteMessage(s: Services, principal: Principal, messageId: string): Promise<void> {
  const item = ownedMessage(s, principal, messageId)
  if (!item) throw notFound()
  const deleted = await s.disk.freeing(() => s.store.messages.delete(item))
  if (!deleted) throw notFound()
  // After the commit: a cached page built meanwhile carries the old version and is dropped.
  s.notifier.bump(deleted.inboxId)
}

/** The message exactly as received over SMTP (the bytes a `.eml` download serves), checked against its SHA-256. */
export async function getMessageSource(s: Services, principal: Principal, messageId: string): Promise<Buffer> {
  const item = ownedMessage(s, principal, messageId)
  const source = item && (await s.store.messages.getSource(item))
  if (!item || !source) throw notFound()
  return verifiedBytes(s, 'message_source', item.id, source.raw, source.sha256)
}
