/** The console's stylesheet and script, served by this process (nothing from another host). */
import css from '../assets/console.css' with { type: 'text' }
import js from '../assets/console.js' with { type: 'text' }
import worker from '../assets/live-worker.js' with { type: 'text' }
import { PATHS } from '../paths.ts'
import { route, type Route } from '../router.ts'

const asset = (body: string, type: string) => () =>
  new Response(body, { headers: { 'content-type': type, 'cache-control': 'public, max-age=300' } })

export const assetRoutes: Route[] = [
  route({ method: 'GET', path: PATHS.stylesheet, access: 'public', handler: asset(css, 'text/css; charset=utf-8') }),
  route({ method: 'GET', path: PATHS.script, access: 'public', handler: asset(js, 'text/javascript; charset=utf-8') }),
  route({
    method: 'GET',
    path: PATHS.liveWorker,
    access: 'public',
    handler: asset(worker, 'text/javascript; charset=utf-8'),
  }),
]
