/**
 * The link check a tester needs: the operator's allow list (CONSOLE_LINK_CHECK_ALLOW) lets it
 * reach the application under test on localhost and its ports, nothing else; redirects are
 * followed hop by hop, each shown and each held to the rules; every link of the HTML and the
 * text part is checked, and every image; the result is kept and shown on a GET page, so a
 * reload or Back sends no request again. Local HTTP servers stand in for the application.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { createServer, type Server } from 'node:http'
import { loadConfig } from '../../src/config.ts'
import { parseAllowList } from '../../src/core/messages/allow-list.ts'
import { checkLinks, MAX_HOPS, publicInternet, withAllowList } from '../../src/core/messages/link-check.ts'
import { setUp } from '../support/console-client.ts'
import { startTestServer } from '../support/harness.ts'
import { sendMail } from '../support/smtp.ts'

setDefaultTimeout(30_000)

let app: Server
let other: Server
let port: number
let otherPort: number
const hits: { method?: string; url?: string }[] = []

beforeAll(async () => {
  app = createServer((request, response) => {
    hits.push({ method: request.method, url: request.url })
    const url = request.url ?? ''
    if (url === '/a') response.writeHead(301, { location: '/b' }).end()
    else if (url === '/b') response.writeHead(302, { location: `http://localhost:${port}/ok` }).end()
    else if (url === '/loop') response.writeHead(302, { location: '/loop' }).end()
    else if (url === '/away') response.writeHead(302, { location: `http://127.0.0.1:${otherPort}/secret` }).end()
    else if (url === '/get-only' && request.method === 'HEAD') response.writeHead(405).end()
    else if (url === '/missing.png') response.writeHead(404).end()
    else response.writeHead(200).end('ok')
  })
  other = createServer((request, response) => {
    hits.push({ method: request.method, url: `other:${request.url}` })
    response.writeHead(200).end()
  })
  await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve))
  await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve))
  port = (app.address() as { port: number }).port
  otherPort = (other.address() as { port: number }).port
})
afterAll(() => {
  app.close()
  other.close()
})

test('the allow list: names, wildcards, ranges, ports; a bad entry stops the server with the variable named', () => {
  const allow = parseAllowList(
    'localhost:3000-3999, *.staging.internal, 10.0.0.0/8:*, [::1]:8000, [fd00::]/8, 192.168.1.7',
  )
  expect(allow.size).toBe(6)
  expect(allow.allowsHost('LOCALHOST', 3000)).toBe(true)
  expect(allow.allowsHost('localhost', 4000)).toBe(false)
  expect(allow.allowsHost('localhost', 80)).toBe(false)
  expect(allow.allowsHost('api.staging.internal', 443)).toBe(true)
  expect(allow.allowsHost('staging.internal', 443)).toBe(false)
  expect(allow.allowsHost('api.staging.internal', 3000)).toBe(false) // no ports named: the usual four
  expect(allow.allowsAddress('10.9.8.7', 22)).toBe(true)
  expect(allow.allowsAddress('11.0.0.1', 80)).toBe(false)
  expect(allow.allowsAddress('::1', 8000)).toBe(true)
  expect(allow.allowsAddress('::1', 8001)).toBe(false)
  expect(allow.allowsAddress('fd12:3456::1', 443)).toBe(true)
  expect(allow.allowsAddress('fe80::1', 443)).toBe(false)
  expect(allow.allowsAddress('192.168.1.7', 8080)).toBe(true)
  expect(allow.allowsAddress('192.168.1.8', 8080)).toBe(false)
  expect(allow.namesPort(3500)).toBe(true)
  expect(allow.namesPort(22)).toBe(true) // through 10.0.0.0/8:*
  expect(parseAllowList('').size).toBe(0)
  for (const bad of [
    'local host',
    'localhost:0',
    'localhost:5-2',
    '10.0.0.0/33',
    '[::1',
    'example.com/8',
    'a..b',
    '::1:80',
  ])
    expect(() => parseAllowList(bad)).toThrow()
  expect(() => loadConfig({ CONSOLE_LINK_CHECK_ALLOW: 'localhost:99999' })).toThrow(/^CONSOLE_LINK_CHECK_ALLOW: /)
  expect(loadConfig({ CONSOLE_LINK_CHECK_ALLOW: 'localhost:3000,127.0.0.0/8' }).consoleLinkCheckAllow).toBe(
    'localhost:3000,127.0.0.0/8',
  )
})

test('local links: refused by default, reached when allowed; redirects followed hop by hop within the rules', async () => {
  const base = `http://localhost:${port}`
  const refused = await checkLinks([`${base}/ok`, `http://127.0.0.1:${port}/ok`], publicInternet)
  expect(refused.map((r) => r.status)).toEqual([null, null])
  expect(hits).toEqual([])

  const deps = withAllowList(parseAllowList(`localhost:${port}`))
  const [ok, chain, loop, away, getOnly, literal] = await checkLinks(
    [`${base}/ok`, `${base}/a`, `${base}/loop`, `${base}/away`, `${base}/get-only`, `http://127.0.0.1:${port}/ok`],
    deps,
  )
  expect([ok!.status, ok!.note]).toEqual([200, '200 OK'])
  expect(chain!.status).toBe(200)
  expect(chain!.hops).toEqual([
    { url: `${base}/a`, status: 301, location: `${base}/b` },
    { url: `${base}/b`, status: 302, location: `${base}/ok` },
  ])
  expect(loop!.note).toBe(`more than ${MAX_HOPS} redirects`)
  expect(loop!.hops).toHaveLength(MAX_HOPS + 1)
  // A hop to a host and port the list does not name is refused before it is requested.
  expect(away!.status).toBeNull()
  expect(away!.note).toContain('(after 1 redirect)')
  expect(hits.some((h) => h.url?.startsWith('other:'))).toBe(false)
  // HEAD refused: asked again with GET.
  expect([getOnly!.status, hits.filter((h) => h.url === '/get-only').map((h) => h.method)]).toEqual([
    200,
    ['HEAD', 'GET'],
  ])
  // The name was allowed, not the address: 127.0.0.1 itself stays refused.
  expect(literal!.status).toBeNull()

  // A range with a port range allows the address, whatever the name.
  const [byRange] = await checkLinks(
    [`http://127.0.0.1:${port}/ok`],
    withAllowList(parseAllowList(`127.0.0.0/8:${port}-${port}`)),
  )
  expect(byRange!.status).toBe(200)
})

test('through the console: every link and image checked, the result kept on a GET page that never checks again', async () => {
  const server = await startTestServer({ env: { CONSOLE_LINK_CHECK_ALLOW: `localhost:${port}` } })
  try {
    const { client, organizationId, key } = await setUp(server, { email: 'owner@example.com' })
    const inbox = (await server.post('/v1/inboxes', key)).body.data
    const base = `http://localhost:${port}`
    // 30 links in the HTML (more than the old 20), two images, and one URL only in the text part.
    const anchors = Array.from({ length: 30 }, (_, i) => `<a href="${base}/ok?n=${i}">Link ${i}</a>`).join(' ')
    const html = `<p>${anchors} <a href="${base}/a">Confirm</a></p><img src="${base}/logo.png" alt=""><img src="${base}/missing.png" alt=""><img src="cid:inline">`
    const raw = [
      'From: App <app@example.com>',
      `To: ${inbox.address}`,
      'Subject: Many links',
      'MIME-Version: 1.0',
      'Content-Type: multipart/alternative; boundary="alt"',
      '',
      '--alt',
      'Content-Type: text/plain; charset=utf-8',
      '',
      `Only here: ${base}/text-only and the end.`,
      '--alt',
      'Content-Type: text/html; charset=utf-8',
      '',
      html,
      '--alt--',
      '',
    ].join('\r\n')
    expect((await sendMail(server.app.smtpPort, { to: [inbox.address] }, raw)).data?.code).toBe(250)
    const [message] = (await server.get(`/v1/inboxes/${inbox.id}/messages`, key)).body.data
    await client.get(`/console/orgs/${organizationId}/messages/${message.id}`)
    const before = hits.length
    const posted = await client.post(`/console/orgs/${organizationId}/messages/${message.id}/check-links`)
    expect(posted.status).toBe(303)
    expect(posted.location).toMatch(
      new RegExp(`^/console/orgs/${organizationId}/messages/${message.id}/link-checks/check_[0-9a-f]{32}$`),
    )
    const requests = hits.length - before
    expect(requests).toBe(31 + 1 + 1 + 2 + 1) // 30 links, Confirm and its two hops, the text's URL, two images (HEAD each; no GET needed)
    const page = await client.get(posted.location!)
    expect(page.status).toBe(200)
    expect(page.html).toContain('34 URLs')
    expect(page.html).toContain(`${base}/text-only`)
    expect(page.html.match(/<td>Image<\/td>/g)).toHaveLength(2)
    expect(page.html).toContain('404')
    expect(page.html).toContain(`301 → <span class="mono">${base}/b</span>`)
    // Reload and Back read the kept result: no request goes out again.
    await client.get(posted.location!)
    await client.get(posted.location!)
    expect(hits.length - before).toBe(requests)
    // Another organisation's member, or a wrong message in the path: not found.
    const otherOrg = await client.post('/console/admin/orgs', { name: 'Elsewhere', preset: 'local' })
    const elsewhere = /orgs\/(org_[0-9a-f]{32})/.exec(otherOrg.location!)![1]!
    expect((await client.get(posted.location!.replace(organizationId, elsewhere))).status).toBe(404)
    expect((await client.get(posted.location!.replace(message.id, `msg_${'0'.repeat(32)}`))).status).toBe(404)
    // The result goes with its message.
    await server.delete(`/v1/messages/${message.id}`, key)
    expect((await client.get(posted.location!)).status).toBe(404)
  } finally {
    await server.stop()
  }
})

test('the whole check answers within its budget; what it did not reach says so', async () => {
  // A server that never answers: each request would wait its full timeout.
  const silent = createServer(() => {})
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
  const silentPort = (silent.address() as { port: number }).port
  try {
    const urls = Array.from({ length: 20 }, (_, i) => `http://localhost:${silentPort}/slow/${i}`)
    const started = performance.now()
    const results = await checkLinks(urls, withAllowList(parseAllowList(`localhost:${silentPort}`)), 300)
    // A bound that holds on a busy machine: far below 20 URLs × 3 s, however late the timers fire.
    expect(performance.now() - started).toBeLessThan(2900)
    expect(results.filter((r) => r.note === 'timed out').length).toBeGreaterThan(0)
    expect(results.filter((r) => r.note === "not checked: the check's 0.3 s ran out").length).toBeGreaterThan(0)
    expect(results.every((r) => r.status === null)).toBe(true)
  } finally {
    silent.closeAllConnections()
    silent.close()
  }
})
