/**
 * Elysia (1.4) finds a request's path with `url.indexOf('/', 11)`, assuming an origin of at
 * least `http://` and four characters. With `Host: api` (a compose service name) it skipped
 * the first path segment, and every route answered 404. Such a request reaches Elysia as a
 * copy whose URL has a longer stand-in origin; the headers (Host included), body and abort
 * signal are the original's, and nothing of ours reads the URL's host.
 */
import { targetRefusal } from '../web/request-target.ts'

const ELYSIA_PATH_SEARCH_START = 11
const STAND_IN_ORIGIN = 'http://short-host.invalid'

export function routableByElysia(request: Request): Request {
  const url = request.url
  const pathStart = url.indexOf('/', url.indexOf('://') + 3)
  if (pathStart < 0 || pathStart >= ELYSIA_PATH_SEARCH_START) return request
  // A malformed request goes on as it came: the API refuses it with its own 400 envelope.
  if (targetRefusal(request)) return request
  return new Request(STAND_IN_ORIGIN + url.slice(pathStart), request)
}
