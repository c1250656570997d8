/**
 * The mail viewer over real HTTP and SMTP: inboxes created and deleted from the console,
 * a hostile message shown as text everywhere, its HTML only in a sandboxed response, the
 * `.eml` and attachment downloads byte for byte, another organisation's ids as 404, and
 * the month's usage equal to GET /v1/usage.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { randomBytes } from 'node:crypto'
import { HEIGHT_SCRIPT, HEIGHT_SCRIPT_SOURCE } from '../../src/console/frame-height.ts'
import { MESSAGE_HTML_CSP, MESSAGE_HTML_REMOTE_IMAGES_CSP, SOURCE_CSP } from '../../src/console/routes/messages.tsx'
import { DOWNLOADS_PER_ORGANIZATION, WAITING_PER_ORGANIZATION } from '../../src/core/attachments/download-slots.ts'
import { setUp, type ConsoleClient } from '../support/console-client.ts'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { sendMail } from '../support/smtp.ts'
import { until } from '../support/wait.ts'

setDefaultTimeout(30_000)

const HOSTILE = '<script>alert(1)</script>"><img src=x onerror=alert(1)>'
let server: TestServer
let owner: ConsoleClient
let key: string
let orgA: string
let orgB: string
let inbox: { id: string; address: string }
let messageId: string
let attachmentId: string
let raw: string
const attachmentBytes = randomBytes(3000)

const base64Lines = (bytes: Buffer) => bytes.toString('base64').replace(/.{1,76}/g, '$&\r\n')

function hostileMessage(to: string): string {
  const boundary = 'b-viewer-test'
  return [
    `From: "${HOSTILE}" <evil@example.com>`,
    `To: ${to}`,
    `Subject: ${HOSTILE}`,
    `X-Hostile: ${HOSTILE}`,
    'MIME-Version: 1.0',
    `Content-Type: multipart/mixed; boundary="${boundary}"`,
    '',
    `--${boundary}`,
    'Content-Type: multipart/alternative; boundary="alt"',
    '',
    '--alt',
    'Content-Type: text/plain; charset=utf-8',
    '',
    `Plain ${HOSTILE}`,
    '--alt',
    'Content-Type: text/html; charset=utf-8',
    '',
    '<p>Hello</p><script>document.title = "pwned"</script><img src="https://tracker.example/pixel.gif">',
    '--alt--',
    `--${boundary}`,
    `Content-Type: application/octet-stream; name="x.bin"`,
    `Content-Disposition: attachment; filename="<img src=x onerror=alert(1)>.bin"`,
    'Content-Transfer-Encoding: base64',
    '',
    base64Lines(attachmentBytes),
    `--${boundary}--`,
    '',
  ].join('\r\n')
}

/** No tag or handler a hostile string tried to open survives as markup. */
function expectInert(html: string) {
  expect(html).not.toContain('<script>alert')
  expect(html).not.toContain('<img src=x')
  expect(html).not.toContain('document.title = "pwned"')
  expect(html).not.toMatch(/<[a-z][^<>]*\son(error|load)=/i)
}

beforeAll(async () => {
  server = await startTestServer()
  ;({ client: owner, organizationId: orgA, key } = await setUp(server, { email: 'owner@example.com' }))
  await owner.get(`/console/orgs/${orgA}`) // a signed-in page: forms now carry the session's token
  const created = await owner.post('/console/admin/orgs', { name: 'Org B', preset: 'hosted' })
  orgB = /orgs\/(org_[0-9a-f]{32})/.exec(created.location!)![1]!
  const made = await owner.post(`/console/orgs/${orgA}/inboxes`, { prefix: 'viewer-test' })
  expect(made.status).toBe(303)
  inbox = { id: /inboxes\/(inbox_[0-9a-f]{32})$/.exec(made.location!)![1]!, address: 'viewer-test@inbox.test' }
  raw = hostileMessage(inbox.address)
  const sent = await sendMail(server.app.smtpPort, { from: 'evil@example.com', to: [inbox.address] }, raw)
  expect(sent.data?.code).toBe(250)
  const listed = await server.get(`/v1/inboxes/${inbox.id}/messages?limit=1&include=content`, key)
  messageId = listed.body.data[0].id
  attachmentId = listed.body.data[0].attachments[0].id
})
afterAll(() => server.stop())

test('the inbox list and the inbox page show the message, escaped', async () => {
  const list = await owner.get(`/console/orgs/${orgA}/inboxes`)
  expect(list.status).toBe(200)
  expect(list.html).toContain(inbox.address)
  const page = await owner.get(`/console/orgs/${orgA}/inboxes/${inbox.id}`)
  expect(page.status).toBe(200)
  // The row links relative to the inbox page; it resolves to the message page.
  const href = new RegExp(`href="([^"]*messages/${messageId})"`).exec(page.html)![1]!
  expect(new URL(href, `${server.url}/console/orgs/${orgA}/inboxes/${inbox.id}`).pathname).toBe(
    `/console/orgs/${orgA}/messages/${messageId}`,
  )
  expect(page.html).toContain(`data-live-events="/console/orgs/${orgA}/inboxes/${inbox.id}/events"`)
  expect(page.html).toContain('&lt;script>alert(1)&lt;/script>')
  expectInert(page.html)
})

test('the message page shows subject, from, headers, text and filename as text, and frames the HTML', async () => {
  const page = await owner.get(`/console/orgs/${orgA}/messages/${messageId}`)
  expect(page.status).toBe(200)
  expectInert(page.html)
  expect(page.html).toContain('X-Hostile')
  expect(page.html).toContain('&lt;img src=x onerror=alert(1)>.bin')
  expect(page.html).toContain(
    `<iframe class="message-html width-desktop" id="message-html" title="Message HTML" sandbox="allow-scripts allow-popups allow-popups-to-escape-sandbox" referrerpolicy="no-referrer" src="/console/orgs/${orgA}/messages/${messageId}/html"`,
  )
  expect(page.headers.get('content-security-policy')).toContain("frame-src 'self'")
  expect(page.headers.get('content-security-policy')).not.toContain('unsafe-inline')
  const remote = await owner.get(`/console/orgs/${orgA}/messages/${messageId}?images=remote`)
  expect(remote.html).toContain(`src="/console/orgs/${orgA}/messages/${messageId}/html?images=remote"`)
})

test('the HTML is served only with a sandbox CSP that blocks scripts, forms and remote loads', async () => {
  const html = await owner.get(`/console/orgs/${orgA}/messages/${messageId}/html`)
  expect(html.status).toBe(200)
  expect(html.html).toContain('<script>document.title') // served as the sender wrote it, inert under the policy
  const csp = html.headers.get('content-security-policy')!
  expect(csp).toBe(MESSAGE_HTML_CSP)
  // Popups (links open in a new tab) and scripts for our one measuring script; no forms, no same-origin.
  expect(csp.split('; ')[0]).toBe('sandbox allow-scripts allow-popups allow-popups-to-escape-sandbox')
  expect(csp).not.toMatch(/allow-(forms|same-origin|top-navigation|modals)/)
  // The only script allowed is ours, by its hash: the message's scripts and handlers stay refused.
  const scripts = csp.split('; ').filter((directive) => directive.startsWith('script-src'))
  expect(scripts).toEqual([`script-src ${HEIGHT_SCRIPT_SOURCE}`])
  expect(HEIGHT_SCRIPT_SOURCE).toMatch(/^'sha256-[A-Za-z0-9+/]{43}='$/)
  expect(csp).not.toMatch(/unsafe-(eval|hashes)|'nonce-|strict-dynamic|script-src-(elem|attr)/)
  expect(html.html.startsWith(`<script>${HEIGHT_SCRIPT}</script>`)).toBe(true)
  expect(html.headers.get('referrer-policy')).toBe('no-referrer')
  expect(csp).toContain("default-src 'none'")
  expect(csp).not.toMatch(/https?:/)
  expect(html.headers.get('x-frame-options')).toBe('SAMEORIGIN')
  expect(html.headers.get('x-content-type-options')).toBe('nosniff')
  const remote = await owner.get(`/console/orgs/${orgA}/messages/${messageId}/html?images=remote`)
  expect(remote.headers.get('content-security-policy')).toBe(MESSAGE_HTML_REMOTE_IMAGES_CSP)
  expect(MESSAGE_HTML_REMOTE_IMAGES_CSP).toStartWith(
    `sandbox allow-scripts allow-popups allow-popups-to-escape-sandbox; default-src 'none'; script-src ${HEIGHT_SCRIPT_SOURCE};`,
  )
  expect(MESSAGE_HTML_REMOTE_IMAGES_CSP).toContain('img-src data: cid: https: http:')
})

test('the highlighted HTML and raw source views are escaped text in their own sandboxed document', async () => {
  for (const part of ['html', 'raw']) {
    const view = await owner.get(`/console/orgs/${orgA}/messages/${messageId}/source?part=${part}`)
    expect(view.status).toBe(200)
    expect(view.headers.get('content-security-policy')).toBe(SOURCE_CSP)
    expect(view.headers.get('content-security-policy')).not.toContain('allow-')
    expect(view.html).not.toContain('<script>')
    expect(view.html).toContain('&lt;script>')
  }
  const other = await owner.get(`/console/orgs/${orgA}/messages/msg_${'0'.repeat(32)}/source?part=raw`)
  expect(other.status).toBe(404)
})

test('the .eml source and the attachment download are the stored bytes, with the API download headers', async () => {
  const source = await fetch(`${server.url}/console/orgs/${orgA}/messages/${messageId}/raw`, {
    headers: { cookie: cookieOf(owner) },
  })
  expect(source.status).toBe(200)
  expect(source.headers.get('content-type')).toBe('message/rfc822')
  expect(source.headers.get('content-disposition')).toBe(
    `attachment; filename="${messageId}.eml"; filename*=UTF-8''${messageId}.eml`,
  )
  expect(source.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox")
  expect(Buffer.from(await source.arrayBuffer()).toString()).toBe(raw)

  const consoleFile = await fetch(`${server.url}/console/orgs/${orgA}/attachments/${attachmentId}`, {
    headers: { cookie: cookieOf(owner) },
  })
  const apiFile = await fetch(`${server.url}/v1/attachments/${attachmentId}`, {
    headers: { authorization: `Bearer ${key}` },
  })
  const bytes = Buffer.from(await consoleFile.arrayBuffer())
  expect(bytes.equals(attachmentBytes)).toBe(true)
  expect(bytes.equals(Buffer.from(await apiFile.arrayBuffer()))).toBe(true)
  for (const name of ['content-type', 'content-disposition', 'cache-control', 'content-security-policy'])
    expect(consoleFile.headers.get(name)).toBe(apiFile.headers.get(name))
})

test("the console's downloads take the organisation's download slots, shared with the API's: they wait their turn, then 429 with Retry-After", async () => {
  const consolePaths = [
    `/console/orgs/${orgA}/attachments/${attachmentId}`,
    `/console/orgs/${orgA}/messages/${messageId}/raw`,
  ]
  const download = (path: string) => fetch(`${server.url}${path}`, { headers: { cookie: cookieOf(owner) } })
  // Sequential downloads each give their slot back once sent: more than the limit in a row all answer.
  for (let i = 0; i < DOWNLOADS_PER_ORGANIZATION + 1; i++) {
    for (const path of consolePaths) {
      const answer = await download(path)
      expect(answer.status).toBe(200)
      await answer.arrayBuffer()
    }
  }
  await until(() => server.sum((s) => s.downloads.total()) === 0, 'every download slot given back')
  // The organisation's slots taken on every machine, as its keys' downloads in flight would hold them.
  const held = server.machines.flatMap((machine) =>
    Array.from({ length: DOWNLOADS_PER_ORGANIZATION }, () => machine.services.downloads.acquire(orgA)),
  )
  // The API answers 429 at once; a console download (a thumbnail the browser would not retry) waits its turn.
  expect(
    (await fetch(`${server.url}/v1/attachments/${attachmentId}`, { headers: { authorization: `Bearer ${key}` } }))
      .status,
  ).toBe(429)
  const waiting = download(consolePaths[0]!)
  await until(() => server.sum((s) => s.downloads.waiting()) === 1, 'the console download waiting for a slot')
  for (const release of held) release()
  const served = await waiting
  expect(served.status).toBe(200)
  expect(Buffer.from(await served.arrayBuffer()).equals(attachmentBytes)).toBe(true)
  await until(() => server.sum((s) => s.downloads.total()) === 0, 'the waiting download gave its slot back')

  // With the slots taken and as many console downloads already waiting as may wait: 429 at once.
  const taken = server.machines.flatMap((machine) =>
    Array.from({ length: DOWNLOADS_PER_ORGANIZATION }, () => machine.services.downloads.acquire(orgA)),
  )
  const queued = server.machines.flatMap((machine) =>
    Array.from({ length: WAITING_PER_ORGANIZATION }, () => machine.services.downloads.acquireInTurn(orgA)),
  )
  try {
    for (const path of consolePaths) {
      const refused = await download(path)
      expect(refused.status).toBe(429)
      expect(refused.headers.get('retry-after')).toBe('1')
      expect(refused.headers.get('content-disposition')).toBeNull()
      expect(await refused.text()).toContain('at most 4 per organization at a time')
    }
    // Another organisation's slots are its own.
    for (const machine of server.machines) machine.services.downloads.acquire(orgB)()
  } finally {
    for (const release of taken) release()
    // Each waiting one gets a slot as the one before it gives it back.
    await Promise.all(queued.map((turn) => turn.then((release) => release())))
  }
  expect(server.sum((s) => s.downloads.total())).toBe(0)
})

test("another organisation's inbox, message and attachment ids answer 404, even to a member of both", async () => {
  for (const path of [
    `/inboxes/${inbox.id}`,
    `/inboxes/${inbox.id}/events`,
    `/messages/${messageId}`,
    `/messages/${messageId}/html`,
    `/messages/${messageId}/raw`,
    `/attachments/${attachmentId}`,
  ]) {
    expect((await owner.get(`/console/orgs/${orgB}${path}`)).status).toBe(404)
  }
  expect((await owner.post(`/console/orgs/${orgB}/messages/${messageId}/delete`)).status).toBe(404)
  expect((await owner.post(`/console/orgs/${orgB}/inboxes/${inbox.id}/delete`)).status).toBe(404)
  expect((await owner.get(`/console/orgs/${orgA}/messages/msg_${'0'.repeat(32)}`)).status).toBe(404)
  expect((await owner.get(`/console/orgs/${orgA}/attachments/not-an-id`)).status).toBe(404)
  expect((await owner.get(`/console/orgs/${orgA}/messages/${messageId}`)).status).toBe(200) // still there
})

test("the inbox list shows the month's usage with the numbers of GET /v1/usage", async () => {
  const usage = (await server.get('/v1/usage', key)).body
  const page = await owner.get(`/console/orgs/${orgA}/inboxes`)
  expect(page.html).toContain(
    `<div class="stat" id="usage-inboxes">${usage.inboxes.active} / ${usage.inboxes.limit}</div>`,
  )
  expect(page.html).toContain(
    `<div class="stat" id="usage-emails">${usage.emails.received} / ${usage.emails.limit}</div>`,
  )
  expect(usage.emails.received).toBe(1)
})

test('a taken or invalid prefix is shown on the form; deleting a message and an inbox works and is gone for the API too', async () => {
  const taken = await owner.post(`/console/orgs/${orgA}/inboxes`, { prefix: 'viewer-test' })
  expect(taken.status).toBe(409)
  expect(taken.html).toContain('already taken')
  const invalid = await owner.post(`/console/orgs/${orgA}/inboxes`, { prefix: '<b>bad</b>' })
  expect(invalid.status).toBe(400)
  expectInert(invalid.html)

  const deleted = await owner.post(`/console/orgs/${orgA}/messages/${messageId}/delete`)
  expect(deleted.status).toBe(303)
  expect(deleted.location).toBe(`/console/orgs/${orgA}/inboxes/${inbox.id}`)
  expect((await server.get(`/v1/messages/${messageId}`, key)).status).toBe(404)
  const empty = await owner.get(deleted.location!)
  expect(empty.html).toContain(`swaks --server localhost:${server.app.smtpPort} --to ${inbox.address}`)

  expect((await owner.post(`/console/orgs/${orgA}/inboxes/${inbox.id}/delete`)).location).toBe(
    `/console/orgs/${orgA}/inboxes`,
  )
  expect((await server.get(`/v1/inboxes/${inbox.id}`, key)).status).toBe(404)
  expect((await owner.get(`/console/orgs/${orgA}/inboxes`)).html).toContain('No inboxes yet')
})

const cookieOf = (client: ConsoleClient) => client.cookieHeader()

test('images the message carries inline (cid:) are shown as data: URLs inside the sandbox', async () => {
  const pixel = randomBytes(64)
  const made = await owner.post(`/console/orgs/${orgA}/inboxes`, { prefix: 'inline-images' })
  const inboxId = /inboxes\/(inbox_[0-9a-f]{32})$/.exec(made.location!)![1]!
  const address = 'inline-images@inbox.test'
  const related = [
    `From: a@example.com`,
    `To: ${address}`,
    'Subject: Inline',
    'MIME-Version: 1.0',
    'Content-Type: multipart/related; boundary="rel"',
    '',
    '--rel',
    'Content-Type: text/html; charset=utf-8',
    '',
    '<img src="cid:logo@example.com"><img src="cid:missing@example.com">',
    '--rel',
    'Content-Type: image/png',
    'Content-ID: <logo@example.com>',
    'Content-Disposition: inline',
    'Content-Transfer-Encoding: base64',
    '',
    base64Lines(pixel),
    '--rel--',
    '',
  ].join('\r\n')
  expect((await sendMail(server.app.smtpPort, { to: [address] }, related)).data?.code).toBe(250)
  const listed = await server.get(`/v1/inboxes/${inboxId}/messages?limit=1`, key)
  const html = await owner.get(`/console/orgs/${orgA}/messages/${listed.body.data[0].id}/html`)
  expect(html.html.trimEnd()).toBe(
    `<script>${HEIGHT_SCRIPT}</script><img src="data:image/png;base64,${pixel.toString('base64')}"><img src="cid:missing@example.com">`,
  )
  expect(html.headers.get('content-security-policy')).toBe(MESSAGE_HTML_CSP)
})
