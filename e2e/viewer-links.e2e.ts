/**
 * Links in a test mail can be followed, and are listed under it with its one-time code: a link in the HTML (sandboxed frame) and a URL in
 * the text part each open in a new tab at exactly their URL, with no referrer and no
 * opener, while the message stays on screen; a javascript: link goes nowhere.
 */
import { expect, test } from '@playwright/test'
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import { createInbox, send, setUp, simpleMessage } from './helpers.ts'
import { startServer, type E2eServer } from './server.ts'

let server: E2eServer
/** Stands in for the application under test: records what each followed link sent. */
let app: Server
let appUrl: string
const seen: { url: string; headers: IncomingHttpHeaders }[] = []

test.beforeAll(async () => {
  server = await startServer()
  app = createServer((request, response) => {
    seen.push({ url: request.url ?? '', headers: request.headers })
    response.writeHead(200, { 'content-type': 'text/html' }).end('<title>Confirmed</title><h1>Confirmed</h1>')
  })
  await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve))
  appUrl = `http://127.0.0.1:${(app.address() as { port: number }).port}`
})
test.afterAll(async () => {
  await server?.stop()
  app?.close()
})

test('a link in the HTML and a URL in the text open in a new tab, without referrer or opener', async ({ browser }) => {
  const context = await browser.newContext({ baseURL: server.baseUrl })
  const page = await context.newPage()
  const { orgPath } = await setUp(page, server)
  const { address } = await createInbox(page, orgPath, 'links')
  const confirm = `${appUrl}/confirm?token=abc123&user=42`
  const reset = `${appUrl}/reset?token=xyz`
  await send(
    server,
    address,
    simpleMessage(address, 'Confirm your account', {
      html: `<p><a href="${confirm.replace('&', '&amp;')}">Confirm</a> <a href="${appUrl}/plain" target="_self">Same frame</a> <a href="javascript:document.title='ran'">Script</a></p>`,
      text: `Reset your password: ${reset}. Thanks.\nYour verification code is 482913.`,
    }),
  )
  await page.reload()
  await page.getByRole('link', { name: 'Confirm your account' }).click()
  const messageUrl = page.url()
  const frame = page.frameLocator('iframe.message-html')

  // The HTML link: a new tab at the exact URL; the message stays where it was.
  const [tab] = await Promise.all([
    context.waitForEvent('page', { timeout: 10_000 }),
    frame.getByRole('link', { name: 'Confirm' }).click(),
  ])
  await tab.waitForLoadState()
  expect(tab.url()).toBe(confirm)
  await expect(tab.getByRole('heading', { name: 'Confirmed' })).toBeVisible()
  expect(await tab.evaluate(() => window.opener)).toBeNull()
  expect(page.url()).toBe(messageUrl)
  await expect(frame.getByRole('link', { name: 'Confirm' })).toBeVisible()
  // A link the sender aimed at the frame itself opens a tab too.
  const [second] = await Promise.all([
    context.waitForEvent('page', { timeout: 10_000 }),
    frame.getByRole('link', { name: 'Same frame' }).click(),
  ])
  await second.waitForLoadState()
  expect(second.url()).toBe(`${appUrl}/plain`)

  // The text part's URL is a link, trailing full stop excluded.
  const [third] = await Promise.all([
    context.waitForEvent('page', { timeout: 10_000 }),
    page.locator('#message-text').getByRole('link', { name: reset }).click(),
  ])
  await third.waitForLoadState()
  expect(third.url()).toBe(reset)
  expect(await third.evaluate(() => window.opener)).toBeNull()

  // Listed under the message: the code a test would extract, and every link (HTML first).
  await expect(page.getByLabel('Code 482913')).toHaveValue('482913')
  await expect(page.locator('#message-extracts ol.links a')).toHaveText([confirm, `${appUrl}/plain`, reset])
  await expect(page.locator('#message-extracts ol.links li').first()).toContainText('“Confirm”')

  // Check links (on for a localhost console): the app here is on a loopback address and an
  // unusual port, so each is refused without a request, and the reason is shown beside it.
  const before = seen.length
  await page.locator('#message-extracts summary').click()
  await page.getByRole('button', { name: 'Check links' }).click()
  await expect(page.locator('#link-check .link-status')).toHaveText(
    Array(3).fill(/^\s*not checked: only ports 80, 443, 8080 and 8443$/),
  )
  expect(seen.length).toBe(before)
  await page.goto(messageUrl)

  // None of them told the application where it was linked from.
  expect(seen.map((s) => s.url)).toEqual(
    expect.arrayContaining(['/confirm?token=abc123&user=42', '/plain', '/reset?token=xyz']),
  )
  // (The new tab's own favicon request names that tab, as any page's does.)
  for (const request of seen.filter((s) => s.url !== '/favicon.ico')) expect(request.headers.referer).toBeUndefined()

  // A script link has no href left: clicking it opens nothing and runs nothing.
  const pagesBefore = context.pages().length
  await frame.getByText('Script').click()
  await page.waitForTimeout(200) // proves nothing happens: no tab opens
  expect(context.pages().length).toBe(pagesBefore)
  const html = page.frames().find((f) => f.url().endsWith('/html'))!
  expect(await html.title()).toBe('')
  await context.close()
})
