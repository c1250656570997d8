/**
 * The console's answer to a request whose Host or target is malformed. The composition
 * root checks every request before dispatching it (a console request parses its URL with
 * `new URL()`, which throws on those); like the API it answers 400 and closes the connection.
 */
import { type HttpProtocolError, safePathOf } from '../web/request-target.ts'
import type { Logger } from '../log.ts'
import { loggablePath } from '../log-paths.ts'
import { securityHeaders } from './security.ts'

export function badTargetResponse(logger: Logger, request: Request, refusal: HttpProtocolError): Response {
  const response = new Response(`${refusal.message}\n`, {
    status: refusal.status,
    headers: { 'content-type': 'text/plain; charset=utf-8', connection: 'close' },
  })
  securityHeaders(response.headers)
  logger.info('console_request', {
    method: request.method,
    path: loggablePath(safePathOf(request)),
    status: refusal.status,
  })
  return response
}
