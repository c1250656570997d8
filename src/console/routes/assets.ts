/** The console's stylesheet and script, served by this process (nothing from another host). */
import css from '../assets/console.css' with { type: 'text' }
import js from '../assets/console.js' with { type: 'text' }
import worker from '../assets/live-worker.js' with { type: 'text' }
import type { Route } from '../router.ts'

const asset = (body: string, type: string) => () => new Response(body, { headers: { 'content-type': type, 'cache-control': 'public, max-age=300' } })

export const assetRoutes: Route[] = [
  { method: 'GET', path: '/console/assets/console.css', handler: asset(css, 'text/css; charset=utf-8') },
  { method: 'GET', path: '/console/assets/console.js', handler: asset(js, 'text/javascript; charset=utf-8') },
  { method: 'GET', path: '/console/assets/live-worker.js', handler: asset(worker, 'text/javascript; charset=utf-8') },
]
