/**
 * The inbox page's live refresh reads the message list alone (header x-live-list: 1):
 * the same rows, filters and paging links as the page, without the layout, marked so the
 * page's script can tell it from any other answer; a value the form cannot use still gets
 * the whole page with its message.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { type ConsoleClient, setUp } from '../support/console-client.ts'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { sendMail, simpleMessage } from '../support/smtp.ts'

let server: TestServer
let owner: ConsoleClient
let path: string

beforeAll(async () => {
  server = await startTestServer()
  const { client, organizationId, key } = await setUp(server, { email: 'owner@example.com' })
  owner = client
  const inbox = (await server.post('/v1/inboxes', key)).body.data
  path = `/console/orgs/${organizationId}/inboxes/${inbox.id}`
  for (const subject of ['First <b>one</b>', 'Second'])
    expect(
      (await sendMail(server.app.smtpPort, { to: [inbox.address] }, simpleMessage({ to: inbox.address, subject }))).data
        ?.code,
    ).toBe(250)
})
afterAll(() => server.stop())

test('the list alone: its rows, escaped, with the security headers and no layout', async () => {
  const page = await owner.get(path)
  const list = await owner.get(path, { 'x-live-list': '1' })
  expect(list.status).toBe(200)
  expect(list.headers.get('x-live-list')).toBe('1')
  expect(list.headers.get('content-security-policy')).toBe(page.headers.get('content-security-policy'))
  expect(list.headers.get('cache-control')).toBe('no-store')
  expect(list.headers.get('server-timing')).toMatch(/^list;dur=\d+\.\d$/)
  expect(list.html).not.toContain('<html')
  expect(list.html).not.toContain('<nav')
  expect(list.html).toContain('First &lt;b>one&lt;/b>')
  // The same markup as inside the page's #message-list, CSRF token included.
  const inner = /<div id="message-list"[^>]*>([\s\S]*?)<\/div><\/section>/.exec(page.html)?.[1]
  expect(inner).toBe(list.html)
  expect(list.html.length).toBeLessThan(page.html.length / 2)
})

test('filters apply to the list alone; a bad value gets the whole page and no marker', async () => {
  const filtered = await owner.get(`${path}?subject=second`, { 'x-live-list': '1' })
  expect(filtered.html).toContain('Second')
  expect(filtered.html).not.toContain('First')
  const bad = await owner.get(`${path}?since=soon`, { 'x-live-list': '1' })
  expect(bad.status).toBe(400)
  expect(bad.headers.get('x-live-list')).toBeNull()
  expect(bad.html).toContain('Received since')
})
