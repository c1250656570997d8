/**
 * The frame that shows message HTML loads nothing from anywhere (`default-src 'none'`),
 * and browsers do not resolve `cid:` URLs. So images the message carries inline
 * (`<img src="cid:logo">` with a `Content-ID: <logo>` part) are written into the HTML as
 * `data:` URLs before it is served. Only image parts, and at most MAX_INLINED_BYTES in
 * all: past that a `cid:` reference stays as it is (a broken image, not a slow page).
 */
import type { Attachment } from '../core/common/models.ts'

export const MAX_INLINED_BYTES = 5 * 1024 * 1024

/** One left-to-right pass: a literal `cid:` then a run of one character class. */
const CID_REFERENCE = /cid:([^\s"'()<>]+)/gi

/** `bytesOf` answers null for bytes it will not serve (they failed their check): that image stays broken. */
export function inlineCidImages(
  html: string,
  attachments: Attachment[],
  bytesOf: (attachmentId: string) => Buffer | null,
): string {
  const byContentId = new Map<string, Attachment>()
  for (const a of attachments) {
    if (a.content_id && a.content_type.toLowerCase().startsWith('image/'))
      byContentId.set(a.content_id.toLowerCase(), a)
  }
  if (byContentId.size === 0) return html
  const dataUrls = new Map<string, string>()
  let budget = MAX_INLINED_BYTES
  return html.replace(CID_REFERENCE, (reference, rawId: string) => {
    let id: string
    try {
      id = decodeURIComponent(rawId).toLowerCase()
    } catch {
      return reference
    }
    const known = dataUrls.get(id)
    if (known) return known
    const attachment = byContentId.get(id)
    if (!attachment || attachment.size_bytes > budget) return reference
    const bytes = bytesOf(attachment.id)
    if (!bytes) return reference
    budget -= attachment.size_bytes
    const url = `data:${attachment.content_type};base64,${bytes.toString('base64')}`
    dataUrls.set(id, url)
    return url
  })
}
