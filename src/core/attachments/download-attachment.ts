import { isoTime } from '../../clock.ts'
import { ID_PATTERNS } from '../../ids.ts'
import type { Principal } from '../api-keys/authenticate.ts'
import { DomainError } from '../common/errors.ts'
import type { Services } from '../common/services.ts'
import { verifiedBytes } from '../common/stored-bytes.ts'

interface AttachmentDownload {
  filename: string
  contentType: string
  content: Buffer
}

/**
 * Metadata and bytes of the caller's attachment; 404 when either is gone or the message
 * expired; 500 when the bytes no longer match their SHA-256 (core/common/stored-bytes.ts).
 */
export async function downloadAttachment(
  s: Services,
  principal: Principal,
  attachmentId: string,
): Promise<AttachmentDownload> {
  const row = ID_PATTERNS.att.test(attachmentId)
    ? await s.store.messages.getAttachment({
        organizationId: principal.organizationId,
        id: attachmentId,
        now: isoTime(s.clock.now()),
      })
    : null
  if (!row) throw new DomainError('attachment_not_found', 'No attachment with this id.')
  return {
    filename: row.filename,
    contentType: row.contentType,
    content: await verifiedBytes(s, 'attachment', attachmentId, row.content, row.sha256),
  }
}
