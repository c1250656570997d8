import { and, eq, gt } from 'drizzle-orm'
import { isoTime } from '../../clock.ts'
import { ID_PATTERNS } from '../../ids.ts'
import { attachmentContents, attachments, messages } from '../../storage/schema.ts'
import type { Principal } from '../api-keys/authenticate.ts'
import { DomainError } from '../errors.ts'
import type { Services } from '../services.ts'
import { verifiedBytes } from '../stored-bytes.ts'

interface AttachmentDownload {
  filename: string
  contentType: string
  content: Buffer
}

/**
 * Metadata and bytes of the caller's attachment; 404 when either is gone or the message
 * expired; 500 when the bytes no longer match their SHA-256 (core/stored-bytes.ts).
 */
export function downloadAttachment(s: Services, principal: Principal, attachmentId: string): AttachmentDownload {
  const row = ID_PATTERNS.att.test(attachmentId)
    ? s.storage.db
        .select({ filename: attachments.filename, contentType: attachments.contentType, content: attachmentContents.content, sha256: attachmentContents.sha256 })
        .from(attachments)
        .innerJoin(attachmentContents, eq(attachmentContents.attachmentId, attachments.id))
        .innerJoin(messages, eq(messages.id, attachments.messageId))
        .where(and(eq(attachments.id, attachmentId), eq(attachments.organizationId, principal.organizationId), gt(messages.expiresAt, isoTime(s.clock.now()))))
        .get()
    : undefined
  if (!row) throw new DomainError('attachment_not_found', 'No attachment with this id.')
  return { filename: row.filename, contentType: row.contentType, content: verifiedBytes(s, 'attachment', attachmentId, row.content, row.sha256) }
}
