/**
 * Console pages, their assets and fragments are sent gzip-compressed to a browser that
 * accepts it: an inbox page of 50 rows is about 40 KB of repetitive markup and shrinks
 * to a fifth. Only text the console rendered is compressed; downloads (attachments, the
 * .eml source) are sent as stored, event streams are never buffered, and the live list
 * is left alone (below).
 */
import { gzipSync } from 'node:zlib'

/** The response header that marks the live list (routes/inboxes.tsx's LIVE_LIST_HEADER). */
const LIVE_LIST_MARK = 'x-live-list'
/** Smaller bodies gain less than the header costs. */
const MIN_BYTES = 1024
const COMPRESSIBLE = /^(text\/html|text\/css|text\/javascript|text\/plain|application\/json)\b/i

/** Whether the request's Accept-Encoding names gzip with a non-zero weight. */
export function acceptsGzip(request: Request): boolean {
  const header = request.headers.get('accept-encoding')
  if (!header) return false
  return header.split(',').some((part) => {
    const [coding, ...params] = part.trim().split(';')
    if (coding!.trim().toLowerCase() !== 'gzip') return false
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='))
    return q === undefined || Number(q.slice(2)) > 0
  })
}

/** The response gzip-compressed when the request accepts it and the body is console text; otherwise as it was. */
export async function compressed(request: Request, response: Response): Promise<Response> {
  const type = response.headers.get('content-type') ?? ''
  if (
    !response.body ||
    !COMPRESSIBLE.test(type) ||
    response.headers.has('content-encoding') ||
    response.headers.has('content-disposition')
  )
    return response
  // The live refresh's list (marked x-live-list, see LIVE_LIST_HEADER) goes as it is: there
  // latency is the measure, and compressing it raised 250-to-visible several-fold in the
  // browser test on a busy machine.
  if (response.headers.has(LIVE_LIST_MARK)) return response
  // Caches keep one copy per encoding, compressed or not.
  response.headers.append('vary', 'Accept-Encoding')
  if (!acceptsGzip(request)) return response
  const body = new Uint8Array(await response.arrayBuffer())
  if (body.byteLength < MIN_BYTES) return new Response(body, response)
  const headers = new Headers(response.headers)
  headers.set('content-encoding', 'gzip')
  headers.delete('content-length')
  // Level 6 (zlib's default): a 50 KB page takes well under a millisecond.
  return new Response(gzipSync(body), { status: response.status, statusText: response.statusText, headers })
}
