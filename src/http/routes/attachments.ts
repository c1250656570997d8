import { Elysia, t } from 'elysia'
import { downloadAttachment } from '../../core/attachments/download-attachment.ts'
import type { Services } from '../../core/services.ts'
import { ErrorModel } from '../openapi.ts'
import type { RequestRegistry } from '../request-registry.ts'

/** `attachment; filename="ascii"; filename*=UTF-8''percent-encoded` (RFC 6266), safe for any name. */
export function contentDisposition(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]|["\\%;]/g, '_').trim() || 'attachment'
  const encoded = encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encoded}`
}

export const attachmentRoutes = (s: Services, requests: RequestRegistry) =>
  new Elysia().get(
    '/v1/attachments/:attachment_id',
    ({ request, params }) => {
      const file = downloadAttachment(s, requests.principal(request), params.attachment_id)
      // The cast only satisfies the DOM typing that preact's JSX types bring in; Bun sends a Buffer as is.
      return new Response(file.content as Uint8Array<ArrayBuffer>, {
        headers: {
          'content-type': file.contentType,
          'content-disposition': contentDisposition(file.filename),
          'cache-control': 'private, no-store',
          // Untrusted bytes: never sniffed, never rendered as our origin's page.
          'x-content-type-options': 'nosniff',
          'content-security-policy': "default-src 'none'; sandbox",
        },
      })
    },
    {
      response: { 200: t.Any({ description: 'Raw bytes; Content-Type is the stored MIME type.' }), 401: ErrorModel, 404: ErrorModel, 429: ErrorModel },
      detail: {
        operationId: 'downloadAttachment',
        summary: 'Raw attachment bytes (same route on BASE_URL and FILES_URL)',
        tags: ['attachments'],
        responses: { 200: { description: 'Raw bytes', content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } } },
      },
    },
  )
