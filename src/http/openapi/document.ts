/**
 * The published interface description (OpenAPI 3.1, version 1.0.0). Built from the
 * response models and the operation table rather than generated from the routes, so
 * private paths (the console) never appear and every status carries its error codes.
 */
import type { PublicUrls } from '../../public-urls.ts'
import { OPERATIONS } from './operations.ts'
import { componentSchemas } from './schemas.ts'

export function openApiDocument(config: PublicUrls & { receivingDomain: string }) {
  const paths: Record<string, Record<string, unknown>> = {}
  for (const { method, path, operation } of OPERATIONS) {
    const withServers =
      operation.operationId === 'downloadAttachment' && config.filesUrl !== config.baseUrl
        ? {
            ...operation,
            servers: [
              { url: config.filesUrl, description: 'Attachment downloads (`download_url`)' },
              { url: config.baseUrl, description: 'The API' },
            ],
          }
        : operation
    paths[path] = { ...paths[path], [method]: withServers }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Pigeonhole',
      version: '1.0.0',
      summary: 'Receive-only test inboxes',
      description:
        `Create an inbox, have the application under test send it real mail over SMTP (addresses ` +
        `end in \`@${config.receivingDomain}\`), wait for the message, assert, delete the inbox. ` +
        `Errors answer \`{ error: { code, message, request_id } }\`; branch on \`code\`.`,
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [{ url: config.baseUrl, description: 'This server' }],
    security: [{ bearer: [] }],
    tags: [
      { name: 'health', description: 'Liveness for load balancers and monitors.' },
      { name: 'inboxes', description: 'Addresses that receive mail.' },
      { name: 'messages', description: 'Received mail: list, wait, read, delete.' },
      { name: 'attachments', description: 'Raw attachment bytes.' },
      { name: 'usage', description: 'Limits and what was used this month.' },
    ],
    paths,
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          description: 'An API key `ph_live_<16 hex>_<48 hex>`, made with the admin CLI or the console.',
        },
      },
      headers: {
        XRequestId: {
          description: 'Identifies the request in the logs; error bodies repeat it as `error.request_id`.',
          schema: { type: 'string' },
        },
      },
      schemas: componentSchemas(),
    },
  }
}
