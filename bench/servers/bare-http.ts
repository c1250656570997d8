/**
 * The API read ceiling: a bare Bun.serve that answers with fixed JSON bodies, byte for
 * byte the bodies Pigeonhole returned for the same requests (files named in BODY_FILES,
 * served at /0, /1, ...). No routing library, no database, no auth.
 */
import { readFileSync } from 'node:fs'

const bodies = (process.env.BODY_FILES ?? '').split(',').map((file) => readFileSync(file))
const headers = { 'content-type': 'application/json' }
Bun.serve({
  port: Number(process.env.PORT),
  hostname: '127.0.0.1',
  fetch(request) {
    const index = Number(request.url.slice(request.url.lastIndexOf('/') + 1))
    const body = bodies[index]
    return body ? new Response(body, { headers }) : new Response('not found', { status: 404 })
  },
})
