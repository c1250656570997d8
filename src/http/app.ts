/**
 * The HTTP transport: request ids, CORS, authentication and rate limiting for /v1, the
 * error envelope, request logs, the OpenAPI document, and the routes. Handlers only
 * translate between HTTP and domain verbs.
 */
import { Elysia } from 'elysia'
import { authenticate } from '../core/api-keys/authenticate.ts'
import { DomainError } from '../core/common/errors.ts'
import { MAX_CREATE_BODY_BYTES } from '../core/inboxes/create-inbox.ts'
import type { Services } from '../core/common/services.ts'
import { newRequestId } from '../ids.ts'
import { CORS_ALLOW_HEADERS, CORS_ALLOW_METHODS, CORS_EXPOSE_HEADERS, corsPolicy } from './cors.ts'
import { errorBody, mayAnswerUnavailable, toErrorResponse } from './errors.ts'
import { installFastFormats } from './formats.ts'
import { openApiRoutes } from './openapi/routes.ts'
import { rejectRepeatedParameters } from './query.ts'
import { RequestRegistry } from './request-registry.ts'
import { checkRequestTarget, safePathOf } from '../web/request-target.ts'
import { loggablePath } from '../log-paths.ts'
import { attachmentRoutes } from './routes/attachments.ts'
import { healthRoutes } from './routes/health.ts'
import { inboxRoutes } from './routes/inboxes.ts'
import { metricsRoutes } from './routes/metrics.ts'
import type { AppMetrics } from '../metrics/app-metrics.ts'
import { type ReadinessProbes, readyRoutes } from './routes/ready.ts'
import { messageRoutes } from './routes/messages.ts'
import type { ConnectionTimeouts } from '../web/connection-timeouts.ts'
import { usageRoutes } from './routes/usage.ts'

export function buildHttpApp(
  s: Services,
  probes: ReadinessProbes,
  connections: ConnectionTimeouts,
  metrics: AppMetrics,
  requests = new RequestRegistry(),
) {
  installFastFormats()
  const cors = corsPolicy(s.config.corsConsoleOrigin, s.config.corsWildcardOrigin)

  return new Elysia({ normalize: false })
    .onRequest(async ({ request, set }) => {
      const state = requests.begin(request)
      set.headers['x-request-id'] = state.id
      const target = checkRequestTarget(request)
      state.path = target.path
      const origin = request.headers.get('origin')
      const granted = origin !== null && cors.allows(origin)
      if (granted) {
        set.headers['access-control-allow-origin'] = origin
        set.headers['access-control-expose-headers'] = CORS_EXPOSE_HEADERS
      }
      if (origin) set.headers.vary = 'Origin'
      if (request.method === 'OPTIONS') {
        if (granted) {
          set.headers['access-control-allow-methods'] = CORS_ALLOW_METHODS
          set.headers['access-control-allow-headers'] = CORS_ALLOW_HEADERS
          set.headers['access-control-max-age'] = '600'
        }
        set.status = 204
        // Answered here, before the request log's hook: a preflight has no request line.
        requests.logged(request)
        return ''
      }
      // Authentication and the rate limit come before routing and validation, so a bad
      // key answers 401 whatever else is wrong with the request.
      if (state.path.startsWith('/v1/') || state.path === '/v1') {
        state.principal = await authenticate(s, request.headers.get('authorization'))
        // Counted in memory (SQLite mode) it answers at once; only PostgreSQL mode's count is awaited.
        const admitted = s.requestLimiter.admit(state.principal)
        if (admitted) await admitted
        // Only the two listings take query parameters
        if (request.method === 'GET') rejectRepeatedParameters(target.url)
        // Refuse an oversized body before reading it (a chunked one is cut off at the same size as it is read).
        if (Number(request.headers.get('content-length') ?? 0) > MAX_CREATE_BODY_BYTES && request.method === 'POST') {
          throw new DomainError(
            'invalid_json',
            `Request body must be a JSON object of at most ${MAX_CREATE_BODY_BYTES} bytes.`,
          )
        }
      }
    })
    .onError(({ error, code, set, request }) => {
      const requestId = requests.get(request)?.id ?? newRequestId()
      const state = requests.get(request)
      const response = toErrorResponse(
        error,
        code,
        s.logger,
        requestId,
        s.storageHealth,
        mayAnswerUnavailable(request.method, state?.path ?? ''),
      )
      if (state) state.errorCode = response.code
      set.status = response.status
      set.headers['x-request-id'] = requestId
      set.headers['content-type'] = 'application/json'
      for (const [name, value] of Object.entries(response.headers)) set.headers[name.toLowerCase()] = value
      return errorBody(response, requestId)
    })
    .onAfterResponse(({ request, set }) => {
      const state = requests.get(request)
      if (!state) return
      // A write the API did (an authenticated POST or DELETE that did not fail): PostgreSQL
      // mode's storage state may end with it (storage-health.ts). Reads prove no write.
      if (state.principal && request.method !== 'GET' && Number(set.status) < 500) s.storageHealth.committed('request')
      s.logger.info('http_request', {
        request_id: state.id,
        method: request.method,
        path: loggablePath(state.path ?? safePathOf(request)),
        status: set.status,
        duration_ms: Math.round((performance.now() - state.startedAt) * 100) / 100,
        organization_id: state.principal?.organizationId,
        key_public_id: state.principal?.keyPublicId,
        error_code: state.errorCode,
        // The answer never reached the client: it left, or a stop closed its connection
        // (a waiting long poll); the status is what would have been sent.
        connection_closed: request.signal.aborted || undefined,
      })
      requests.logged(request)
    })
    .use(openApiRoutes(s))
    .use(healthRoutes())
    .use(readyRoutes(s, probes))
    .use(metricsRoutes(s, metrics))
    .use(inboxRoutes(s, requests))
    .use(messageRoutes(s, requests, connections))
    .use(attachmentRoutes(s, requests))
    .use(usageRoutes(s, requests))
}
