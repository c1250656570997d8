import { and, eq, gt } from 'drizzle-orm'
import { isoTime } from '../../clock.ts'
import { ID_PATTERNS } from '../../ids.ts'
import { attachmentContents, attachments, messages } from '../../storage/schema.ts'
import type { Principal } from '../api-keys.ts'
import { DomainError } from '../errors.ts'
import type { Services } from '../services.ts'

interface AttachmentDownload {
  filename: string
  contentType: string
  content: Buffer
}

/** Metadata and bytes of the caller's attachment; 404 when either is gone or the message expired. */
export function downloadAttachment(s: Services, principal: Principal, attachmentId: string): AttachmentDownload {
  const row = ID_PATTERNS.att.test(attachmentId)
    ? s.storage.db
        .select({ filename: attachments.filename, contentType: attachments.contentType, content: attachmentContents.content })
        .from(attachments)
        .innerJoin(attachmentContents, eq(attachmentContents.attachmentId, attachments.id))
        .innerJoin(messages, eq(messages.id, attachments.messageId))
        .where(and(eq(attachments.id, attachmentId), eq(attachments.organizationId, principal.organizationId), gt(messages.expiresAt, isoTime(s.clock.now()))))
        .get()
    : undefined
  if (!row) throw new DomainError('attachment_not_found', 'No attachment with this id.')
  return row
}
