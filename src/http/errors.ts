/**
 * The one place that turns thrown errors into an HTTP status, headers and the public
 * error envelope `{ error: { code, message, request_id } }`.
 */
import { DomainError, type ErrorCode } from '../core/common/errors.ts'
import { STORAGE_RETRY_AFTER_SECONDS, type StorageHealth } from '../core/runtime/storage-health.ts'
import { errorFields, type Logger } from '../log.ts'
import { QUERY_ERROR_CODES, QUERY_ERROR_MESSAGES } from './query.ts'
import { HttpProtocolError } from '../web/request-target.ts'

interface ErrorResponse {
  status: number
  code: ErrorCode | HttpProtocolError['code']
  message: string
  headers: Record<string, string>
}

const STATUS: Record<ErrorCode, number> = {
  invalid_api_key: 401,
  invalid_json: 422,
  unknown_property: 422,
  invalid_prefix: 422,
  invalid_idempotency_key: 422,
  idempotency_key_reused: 409,
  idempotency_in_progress: 409,
  idempotency_unavailable: 503,
  inbox_quota_exceeded: 409,
  address_unavailable: 409,
  address_generation_failed: 503,
  email_routing_unavailable: 503,
  inbox_not_found: 404,
  message_not_found: 404,
  attachment_not_found: 404,
  invalid_limit: 422,
  invalid_cursor: 422,
  invalid_include: 422,
  invalid_wait_seconds: 422,
  invalid_sender: 422,
  invalid_sender_domain: 422,
  invalid_received_after: 422,
  invalid_subject: 422,
  rate_limit_exceeded: 429,
  long_poll_limit_exceeded: 429,
  internal_error: 500,
  insufficient_storage: 503,
  storage_unavailable: 503,
  not_found: 404,
}

function fromDomainError(error: DomainError): ErrorResponse {
  // A provider that answered with an error is a bad gateway; one that could not be reached, unavailable.
  const status = error.facts.routing === 'rejected' ? 502 : STATUS[error.code]
  const headers: Record<string, string> =
    error.facts.retryAfterSeconds === undefined ? {} : { 'Retry-After': String(error.facts.retryAfterSeconds) }
  return { status, code: error.code, message: error.message, headers }
}

interface FrameworkError {
  code?: unknown
  type?: unknown
  all?: Array<{ path?: string }>
}

/**
 * The two operations whose statuses in the interface include 503 (createInbox, deleteInbox).
 * Elsewhere the interface allows no 503, so a storage failure or a full volume there keeps
 * the 500 every operation may answer, with the same retry hint.
 */
export const mayAnswerUnavailable = (method: string, path: string) =>
  (method === 'POST' && path === '/v1/inboxes') || (method === 'DELETE' && /^\/v1\/inboxes\/[^/]+$/.test(path))

/** Classifies anything thrown while handling a request. Unknown failures become 500 and are logged. */
export function toErrorResponse(
  error: unknown,
  frameworkCode: unknown,
  logger: Logger,
  requestId: string,
  storage?: StorageHealth,
  unavailableAllowed = true,
): ErrorResponse {
  if (error instanceof DomainError) {
    const response = fromDomainError(error)
    // A full volume meets a delete of a message too (insufficient_storage from the guard's
    // freeing); that operation lists no 503, so it answers its 500 with the same retry hint.
    if (response.status === 503 && !unavailableAllowed) return { ...response, status: 500, code: 'internal_error' }
    return response
  }
  // A read-only, failing or locked volume is a state of the machine that passes: a retry
  // hint, logged once when it begins (storage-health.ts) rather than once per request.
  if (storage?.failed(error)) {
    return {
      status: unavailableAllowed ? 503 : 500,
      code: unavailableAllowed ? 'storage_unavailable' : 'internal_error',
      message: 'The server cannot use its storage right now; retry later.',
      headers: { 'Retry-After': String(STORAGE_RETRY_AFTER_SECONDS) },
    }
  }
  if (error instanceof HttpProtocolError) {
    // The framing of what follows on this connection cannot be trusted (a body may still be
    // arriving, a CONNECT expects a tunnel): answer, then close.
    return { status: error.status, code: error.code, message: error.message, headers: { connection: 'close' } }
  }
  if (frameworkCode === 'VALIDATION' && (error as FrameworkError).type === 'response') {
    // Our own output broke its schema: a bug on our side, never the client's fault.
    logger.error('response_validation_failed', {
      request_id: requestId,
      paths: ((error as FrameworkError).all ?? []).map((issue) => issue.path),
    })
    return {
      status: 500,
      code: 'internal_error',
      message: 'Unexpected failure; the request id identifies it in the logs.',
      headers: {},
    }
  }
  if (frameworkCode === 'VALIDATION') {
    const all = (error as FrameworkError).all ?? []
    logger.debug('validation_failed', { request_id: requestId, paths: all.map((issue) => issue.path) })
    const field = all.map((issue) => issue.path?.split('/')[1]).find((name) => name && name in QUERY_ERROR_CODES)
    const code = field ? QUERY_ERROR_CODES[field]! : 'invalid_json'
    return { status: 422, code, message: QUERY_ERROR_MESSAGES[code] ?? 'Invalid request.', headers: {} }
  }
  if (frameworkCode === 'PARSE')
    return { status: 422, code: 'invalid_json', message: 'Request body must be a JSON object.', headers: {} }
  if (frameworkCode === 'NOT_FOUND')
    return {
      status: 404,
      code: 'not_found',
      message: 'No such route. The API is under /v1, described at /openapi; the web console is at /console/.',
      headers: {},
    }
  logger.error('unhandled_error', { request_id: requestId, ...errorFields(error) })
  return {
    status: 500,
    code: 'internal_error',
    message: 'Unexpected failure; the request id identifies it in the logs.',
    headers: {},
  }
}

export function errorBody(response: ErrorResponse, requestId: string) {
  return { error: { code: response.code, message: response.message, request_id: requestId } }
}
