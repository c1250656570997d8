import { Elysia, t } from 'elysia'
import { downloadAttachment } from '../../core/attachments/download-attachment.ts'
import type { Services } from '../../core/common/services.ts'
import { heldDownload } from '../../web/download-response.ts'
import { ErrorModel } from '../openapi/envelopes.ts'
import type { RequestRegistry } from '../request-registry.ts'

// The header builder lives with the shared download response (the console serves downloads too).
export { contentDisposition } from '../../web/download-response.ts'

export const attachmentRoutes = (s: Services, requests: RequestRegistry) =>
  new Elysia().get(
    '/v1/attachments/:attachment_id',
    async ({ request, params }) => {
      const principal = requests.principal(request)
      return heldDownload(s.downloads, principal.organizationId, () =>
        downloadAttachment(s, principal, params.attachment_id),
      )
    },
    {
      response: {
        200: t.Any({ description: 'Raw bytes; Content-Type is the stored MIME type.' }),
        401: ErrorModel,
        404: ErrorModel,
        429: ErrorModel,
      },
    },
  )
