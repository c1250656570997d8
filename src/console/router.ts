/**
 * The console's own small router: paths under /console and /setup never reach the API's
 * Elysia app (so none appear in the OpenAPI document or touch /v1). For every request it
 * resolves the session; for every POST it bounds and parses the form and checks the
 * Origin and the CSRF token, then resolves the access the route declares (access.ts),
 * before any handler runs; it maps Refusal to a page once and adds the security
 * headers to every response.
 */
import { Refusal } from '../core/common/refusals.ts'
import { DomainError } from '../core/common/errors.ts'
import { STORAGE_RETRY_AFTER_SECONDS } from '../core/runtime/storage-health.ts'
import { readBodyText } from '../web/body.ts'
import { HttpProtocolError } from '../web/request-target.ts'
import { errorFields } from '../log.ts'
import { loggablePath } from '../log-paths.ts'
import {
  ACCESS_LEVELS,
  isAccess,
  needsOrganization,
  resolveAccess,
  type Access,
  type Member,
  type Resolved,
  type SignedIn,
  type Visitor,
} from './access.ts'
import { ConsoleRequest, redirect, safeNext, signInFor, type ConsoleDeps } from './context.ts'
import { CSRF_FIELD, tokensMatch } from './csrf.ts'
import { asConsoleError, STATUS } from './errors.ts'
import { renderError } from './pages/error.tsx'
import { hasControlCharacter, PARAM, PATHS, type ConsolePath, type ParamName } from './paths.ts'
import { sameOrigin, securityHeaders } from './security.ts'
import { compressed } from './compression.ts'

/** A route as its file declares it: the pattern from PATHS, who may reach it, and the handler. */
export interface RouteDefinition<P extends string, A extends Access> {
  method: 'GET' | 'POST'
  path: ConsolePath<P>
  access: A
  handler: (ctx: ConsoleRequest<ParamName<P>>, who: Resolved<A>) => Response | Promise<Response>
}

/** A route as the router holds it (the definition with its types erased). */
export interface Route {
  method: 'GET' | 'POST'
  /** The pattern of its PATHS entry (a `:name` segment matches one path segment). */
  path: string
  access: Access
  // A method, so handlers typed for their own params and access fit here.
  handler(ctx: ConsoleRequest, who: Visitor | SignedIn | Member): Response | Promise<Response>
}

/** Declares a route; the handler's params and `who` follow from its path and access. */
export const route = <const P extends string, const A extends Access>(definition: RouteDefinition<P, A>): Route => ({
  ...definition,
  path: definition.path.pattern,
})

/** Forms are small; anything larger is refused before it is read. */
const MAX_FORM_BYTES = 64 * 1024

interface CompiledRoute extends Route {
  pattern: RegExp
  names: string[]
}

/** Refuses, at start-up, a route that does not say who may reach it. */
export const compileRoute = (route: Route): CompiledRoute => {
  const id = `${route.method} ${route.path}`
  if (!isAccess(route.access))
    throw new Error(`console route ${id} declares no access level (one of ${ACCESS_LEVELS.join(', ')})`)
  const names: string[] = []
  const source = route.path.replace(PARAM, (_, name: string) => {
    names.push(name)
    return '([^/]+)'
  })
  if (needsOrganization(route.access) && !names.includes('org'))
    throw new Error(`console route ${id} is for members but has no :org in its path`)
  return { ...route, pattern: new RegExp(`^${source}/?$`), names }
}

/** True for the paths the console answers (the composition root routes them here). */
export function isConsolePath(url: string): boolean {
  const start = url.indexOf('/', url.indexOf('//') + 2)
  if (start < 0) return false
  for (const prefix of [PATHS.home.pattern, PATHS.setup.pattern]) {
    if (url.startsWith(prefix, start)) {
      const next = url[start + prefix.length]
      if (next === undefined || next === '/' || next === '?') return true
    }
  }
  return false
}

/** Refusals of a form the person can correct or retry; the others (404, 403) end on their own page. */
const RETURNED_KINDS = new Set<string>(['invalid', 'conflict', 'throttled'])

/** The console page a form was sent from (its Referer, same origin only), or null. */
function formPage(request: Request, baseUrl: string): string | null {
  const referer = request.headers.get('referer')
  if (!referer) return null
  try {
    const from = new URL(referer)
    if (from.origin !== new URL(baseUrl).origin && from.host !== request.headers.get('host')) return null
    const path = from.pathname + from.search
    return safeNext(path) === PATHS.home.link() && from.pathname !== PATHS.home.link() ? null : safeNext(path)
  } catch {
    return null
  }
}

export function consoleRouter(deps: ConsoleDeps, routes: Route[]) {
  const compiled = routes.map(compileRoute)
  const { logger } = deps.s

  async function dispatch(ctx: ConsoleRequest): Promise<Response> {
    const method = ctx.request.method === 'HEAD' ? 'GET' : ctx.request.method
    const matching = compiled.filter((route) => route.pattern.test(ctx.url.pathname))
    const route = matching.find((candidate) => candidate.method === method)
    if (!route) {
      if (matching.length > 0) return renderError(ctx, 405, 'This page does not accept that method.')
      throw new Refusal('not_found', 'Not found.')
    }
    const values = route.pattern.exec(ctx.url.pathname)!.slice(1)
    try {
      ctx.params = Object.fromEntries(route.names.map((name, i) => [name, decodeURIComponent(values[i]!)]))
    } catch {
      throw new Refusal('not_found', 'Not found.')
    }
    // A NUL would reach PostgreSQL as an error, not as "no such row" (see hasControlCharacter).
    if (Object.values(ctx.params).some(hasControlCharacter)) throw new Refusal('not_found', 'Not found.')
    if (method === 'POST') {
      const refusal = await readForm(ctx)
      if (refusal) return refusal
    }
    return route.handler(ctx, await resolveAccess(ctx, route.access, ctx.params.org))
  }

  async function readForm(ctx: ConsoleRequest): Promise<Response | null> {
    const { request } = ctx
    if (!sameOrigin(request, deps.s.publicUrls().baseUrl))
      return renderError(ctx, 403, 'This form was sent from another site, so it was refused.')
    const length = Number(request.headers.get('content-length') ?? NaN)
    if (!Number.isFinite(length)) return renderError(ctx, 411, 'Forms must be sent with a Content-Length.')
    if (length > MAX_FORM_BYTES) return renderError(ctx, 413, 'The form is too large.')
    const type = request.headers.get('content-type') ?? ''
    if (!type.startsWith('application/x-www-form-urlencoded'))
      return renderError(ctx, 415, 'Forms must be sent as application/x-www-form-urlencoded.')
    let body: string
    try {
      // Bounded in time like /v1 bodies: a trickled form must not hold the request open.
      body = await readBodyText(request, MAX_FORM_BYTES, deps.s.config.httpBodyTimeoutMs)
    } catch (error) {
      if (error instanceof DomainError) return renderError(ctx, 413, 'The form is too large.')
      if (!(error instanceof HttpProtocolError)) throw error
      const response = await renderError(ctx, 408, 'The form did not arrive in time. Send it again.')
      response.headers.set('connection', 'close')
      return response
    }
    ctx.form = new URLSearchParams(body)
    if (!tokensMatch(ctx.form.get(CSRF_FIELD), ctx.expectedCsrf())) {
      return renderError(ctx, 403, 'The form expired or was not sent from this console. Reload the page and try again.')
    }
    return null
  }

  return async function handle(request: Request, clientAddress: string): Promise<Response> {
    const startedAt = performance.now()
    let ctx: ConsoleRequest | undefined
    let response: Response
    try {
      ctx = await ConsoleRequest.open(deps, request, clientAddress)
      response = await dispatch(ctx)
    } catch (error) {
      if (ctx) response = await errorResponse(ctx, error)
      else {
        logger.error('console_error', errorFields(error))
        response = new Response('Something went wrong on our side; the server log has the details.', {
          status: 500,
          headers: { 'content-type': 'text/plain; charset=utf-8' },
        })
      }
    }
    for (const value of ctx?.setCookies ?? []) response.headers.append('set-cookie', value)
    securityHeaders(response.headers)
    response = await compressed(request, response)
    logger.info('console_request', {
      method: request.method,
      path: ctx ? loggablePath(ctx.url.pathname) : undefined,
      status: response.status,
      user_id: ctx?.user?.id,
      duration_ms: Math.round((performance.now() - startedAt) * 100) / 100,
    })
    return response
  }

  async function errorResponse(ctx: ConsoleRequest, thrown: unknown): Promise<Response> {
    const error = asConsoleError(thrown)
    if (error instanceof Refusal) {
      if (error.kind === 'unauthenticated' && ctx.request.method === 'GET') return redirect(signInFor(ctx.url))
      // A refused form goes back to the page it was sent from, with the message: reloading
      // must not send it again. Forms with fields worth keeping do this in their handlers.
      const back =
        ctx.request.method === 'POST' && RETURNED_KINDS.has(error.kind)
          ? formPage(ctx.request, deps.s.publicUrls().baseUrl)
          : null
      if (back)
        return ctx.failBack(back, {
          message: error.message,
          status: STATUS[error.kind],
          fields: {},
          retryAfterSeconds: error.retryAfterSeconds,
        })
      const response = await renderError(ctx, STATUS[error.kind], error.message)
      if (error.retryAfterSeconds) response.headers.set('retry-after', String(error.retryAfterSeconds))
      return response
    }
    // A read-only, failing or locked volume passes: a page that says so and a retry hint,
    // logged once when the state begins (storage-health.ts), not a stack per request.
    if (deps.s.storageHealth.failed(thrown)) {
      const response = await renderError(
        ctx,
        503,
        'The server cannot use its storage right now. Try again in a few seconds.',
      )
      response.headers.set('retry-after', String(STORAGE_RETRY_AFTER_SECONDS))
      return response
    }
    // A DomainError left here is internal_error, already logged once by the verb that threw it.
    if (!(error instanceof DomainError))
      logger.error('console_error', { path: loggablePath(ctx.url.pathname), ...errorFields(error) })
    return renderError(ctx, 500, 'Something went wrong on our side; the server log has the details.')
  }
}
