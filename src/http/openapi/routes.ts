/**
 * /openapi/json (the document) and /openapi (a browsable page). The page's viewer is the
 * swagger-ui-dist package, pinned in package.json and served from here, so it renders
 * with no network; its Content-Security-Policy forbids loading anything from another host.
 */
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { Elysia, NotFoundError } from 'elysia'
import type { Services } from '../../core/common/services.ts'
import { openApiDocument } from './document.ts'

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Pigeonhole API</title>
<link rel="stylesheet" href="/openapi/assets/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/openapi/assets/swagger-ui-bundle.js"></script>
<script src="/openapi/assets/init.js"></script>
</body>
</html>
`
// validatorUrl: null, or the viewer would ask an online validator for a badge.
const INIT =
  `window.ui = SwaggerUIBundle({ url: '/openapi/json', dom_id: ` +
  `'#swagger-ui', deepLinking: true, validatorUrl: null })\n`
const PAGE_POLICY = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; connect-src 'self'"

function viewerAssets(): Record<string, { body: string; type: string }> {
  const dir = dirname(Bun.resolveSync('swagger-ui-dist/package.json', import.meta.dir))
  return {
    'swagger-ui-bundle.js': {
      body: readFileSync(join(dir, 'swagger-ui-bundle.js'), 'utf8'),
      type: 'text/javascript; charset=utf-8',
    },
    'swagger-ui.css': { body: readFileSync(join(dir, 'swagger-ui.css'), 'utf8'), type: 'text/css; charset=utf-8' },
    'init.js': { body: INIT, type: 'text/javascript; charset=utf-8' },
  }
}

export function openApiRoutes(s: Pick<Services, 'config' | 'publicUrls'>) {
  let assets: ReturnType<typeof viewerAssets> | undefined // read on first view: most servers never show the page
  return new Elysia()
    .get('/openapi/json', () => openApiDocument({ ...s.publicUrls(), receivingDomain: s.config.receivingDomain }))
    .get(
      '/openapi',
      () =>
        new Response(PAGE, {
          headers: { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': PAGE_POLICY },
        }),
    )
    .get('/openapi/assets/:name', ({ params }) => {
      assets ??= viewerAssets()
      const asset = assets[params.name]
      if (!asset) throw new NotFoundError()
      return new Response(asset.body, {
        headers: { 'content-type': asset.type, 'cache-control': 'public, max-age=3600' },
      })
    })
}
