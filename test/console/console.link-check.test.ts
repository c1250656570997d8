/**
 * The viewer's link check: public addresses only (every range that is not, including
 * inside IPv6 forms), the connection pinned to the checked address, redirects followed with
 * each hop held to the same rules before it is requested, at most MAX_CHECKED links; off on
 * a public deployment unless turned on. The allow list and the kept result page are in
 * console.link-check-allow.test.ts.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { createServer, type Server } from 'node:http'
import { checkLinks, isPublicAddress, MAX_CHECKED, publicInternet } from '../../src/core/messages/link-check.ts'
import { setUp } from '../support/console-client.ts'
import { startTestServer } from '../support/harness.ts'
import { sendMail, simpleMessage } from '../support/smtp.ts'

setDefaultTimeout(30_000)

let app: Server
let port: number
const hits: { host?: string; url?: string }[] = []

beforeAll(async () => {
  app = createServer((request, response) => {
    hits.push({ host: request.headers.host, url: request.url })
    if (request.url === '/moved') response.writeHead(302, { location: 'http://127.0.0.1/admin' }).end()
    else response.writeHead(request.url === '/gone' ? 404 : 200).end('body')
  })
  await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve))
  port = (app.address() as { port: number }).port
})
afterAll(() => app.close())

test('only public addresses pass, in every notation', () => {
  for (const ip of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])
    expect(isPublicAddress(ip)).toBe(true)
  for (const ip of [
    '127.0.0.1',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '192.0.2.1',
    '198.18.0.1',
    '::',
    '::1',
    '::ffff:127.0.0.1',
    '::ffff:169.254.169.254',
    '::127.0.0.1',
    '64:ff9b::a00:1',
    'fc00::1',
    'fd12::1',
    'fe80::1',
    'ff02::1',
    '2001:db8::1',
    '2002:7f00:1::1',
    'not an ip',
  ]) {
    expect(isPublicAddress(ip)).toBe(false)
  }
})

test('loopback, private, odd ports and schemes are refused before any connection', async () => {
  const results = await checkLinks([
    `http://127.0.0.1:8080/`,
    'http://localhost/',
    'http://[::1]/',
    'http://10.0.0.1/',
    'http://169.254.169.254/latest/meta-data',
    'ftp://example.com/',
    'http://example.com:22/',
    'http://user:pw@example.com/',
  ])
  expect(results.map((r) => r.status)).toEqual(Array(8).fill(null))
  expect(results.slice(0, 5).map((r) => r.note)).toEqual(Array(5).fill('refused: not a public address'))
  expect(results[5]!.note).toContain('only http and https')
  expect(results[6]!.note).toContain('only ports')
  expect(results[7]!.note).toContain('credentials')
  expect(hits).toEqual([])
})

test('the request goes to the address that was checked, once resolved; a redirect is a hop, checked before it is followed', async () => {
  let lookups = 0
  // A name that resolves to the test server; the policy widened to allow it (the real one refuses loopback).
  const resolve = async () => {
    lookups++
    return [{ address: '127.0.0.1', family: 4 }]
  }
  const deps = { resolve, allowed: () => true, ports: new Set([port]) }
  const results = await checkLinks(
    [`http://app.test:${port}/confirm?t=1`, `http://app.test:${port}/gone`, `http://app.test:${port}/moved`],
    deps,
  )
  // The redirect's target (port 80 of loopback) is outside the widened policy's ports: refused before any request.
  expect(results.map((r) => r.status)).toEqual([200, 404, null])
  expect(results[2]!.hops).toEqual([
    { url: `http://app.test:${port}/moved`, status: 302, location: 'http://127.0.0.1/admin' },
  ])
  expect(results[2]!.note).toBe('not checked: only ports 80, 443, 8080 and 8443 (after 1 redirect)')
  expect(lookups).toBe(3)
  expect(hits.map((h) => h.url).sort()).toEqual(['/confirm?t=1', '/gone', '/moved'])
  expect(hits.every((h) => h.host === `app.test:${port}`)).toBe(true)
  // A name whose answer includes one private address is refused whole.
  const mixed = await checkLinks([`http://app.test:${port}/`], {
    ...deps,
    resolve: async () => [
      { address: '8.8.8.8', family: 4 },
      { address: '127.0.0.1', family: 4 },
    ],
    allowed: isPublicAddress,
  })
  expect(mixed[0]!.note).toBe('refused: not a public address')
})

test(`at most ${MAX_CHECKED} links are checked`, async () => {
  const many = Array.from({ length: MAX_CHECKED + 5 }, (_, i) => `http://10.0.0.${i}/`)
  expect(await checkLinks(many, publicInternet)).toHaveLength(MAX_CHECKED)
})

test('off on a public deployment (auto), on for localhost; the route is 404 when off', async () => {
  for (const [env, enabled] of [
    [{ BASE_URL: 'https://mail.example.com' }, false],
    [{}, true],
    [{ BASE_URL: 'https://mail.example.com', CONSOLE_LINK_CHECK: 'on' }, true],
    [{ CONSOLE_LINK_CHECK: 'off' }, false],
  ] as const) {
    const server = await startTestServer({ env })
    try {
      const { client, organizationId, key } = await setUp(server, { email: 'owner@example.com' })
      const inbox = (await server.post('/v1/inboxes', key)).body.data
      await sendMail(
        server.app.smtpPort,
        { to: [inbox.address] },
        simpleMessage({ to: inbox.address, subject: 'Links', text: 'Open http://10.0.0.1/x now' }),
      )
      const listed = (await server.get(`/v1/inboxes/${inbox.id}/messages`, key)).body.data
      const page = await client.get(`/console/orgs/${organizationId}/messages/${listed[0].id}`)
      expect(page.html.includes('Check links')).toBe(enabled)
      const checked = await client.post(`/console/orgs/${organizationId}/messages/${listed[0].id}/check-links`)
      expect(checked.status).toBe(enabled ? 303 : 404)
      if (enabled) expect((await client.get(checked.location!)).html).toContain('refused: not a public address')
    } finally {
      await server.stop()
    }
  }
})
