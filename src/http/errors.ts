/**
 * The one place that turns thrown errors into the public error envelope
 * `{ error: { code, message, request_id } }`.
 */
import { DomainError, type ErrorCode } from '../core/errors.ts'
import { errorFields, type Logger } from '../log.ts'
import { QUERY_ERROR_CODES, QUERY_ERROR_MESSAGES } from './query.ts'
import { HttpProtocolError } from './request-target.ts'

export interface ErrorResponse {
  status: number
  code: ErrorCode | HttpProtocolError['code']
  message: string
  headers: Record<string, string>
}

interface FrameworkError {
  code?: unknown
  type?: unknown
  all?: Array<{ path?: string }>
}

/** Classifies anything thrown while handling a request. Unknown failures become 500 and are logged. */
export function toErrorResponse(error: unknown, frameworkCode: unknown, logger: Logger, requestId: string): ErrorResponse {
  if (error instanceof DomainError) {
    return { status: error.status, code: error.code, message: error.message, headers: error.options.headers ?? {} }
  }
  if (error instanceof HttpProtocolError) {
    // The framing of what follows on this connection cannot be trusted (a body may still be
    // arriving, a CONNECT expects a tunnel): answer, then close.
    return { status: error.status, code: error.code, message: error.message, headers: { connection: 'close' } }
  }
  if (frameworkCode === 'VALIDATION' && (error as FrameworkError).type === 'response') {
    // Our own output broke its schema: a bug on our side, never the client's fault.
    logger.error('response_validation_failed', { request_id: requestId, paths: ((error as FrameworkError).all ?? []).map((issue) => issue.path) })
    return { status: 500, code: 'internal_error', message: 'Unexpected failure; the request id identifies it in the logs.', headers: {} }
  }
  if (frameworkCode === 'VALIDATION') {
    const all = (error as FrameworkError).all ?? []
    logger.debug('validation_failed', { request_id: requestId, paths: all.map((issue) => issue.path) })
    const field = all.map((issue) => issue.path?.split('/')[1]).find((name) => name && name in QUERY_ERROR_CODES)
    const code = field ? QUERY_ERROR_CODES[field]! : 'invalid_json'
    return { status: 422, code, message: QUERY_ERROR_MESSAGES[code] ?? 'Invalid request.', headers: {} }
  }
  if (frameworkCode === 'PARSE') return { status: 422, code: 'invalid_json', message: 'Request body must be a JSON object.', headers: {} }
  if (frameworkCode === 'NOT_FOUND') return { status: 404, code: 'not_found', message: 'No such route.', headers: {} }
  logger.error('unhandled_error', { request_id: requestId, ...errorFields(error) })
  return { status: 500, code: 'internal_error', message: 'Unexpected failure; the request id identifies it in the logs.', headers: {} }
}

export function errorBody(response: ErrorResponse, requestId: string) {
  return { error: { code: response.code, message: response.message, request_id: requestId } }
}
