/**
 * The mail viewer in a real browser, as a newcomer meets it: setup from the printed link,
 * an inbox created from the setup page's button, a message sent over SMTP appearing
 * without a reload, its HTML in the sandboxed frame with its <script> proven not to run,
 * the source and an attachment downloaded byte for byte, and the message deleted.
 */
import { expect, test, type Page } from '@playwright/test'
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { sendMail } from '../test/support/smtp.ts'
import { startServer, type E2eServer } from './server.ts'

let server: E2eServer
const SHOTS = process.env.CONSOLE_SCREENSHOTS ? fileURLToPath(new URL('../docs/console', import.meta.url)) : null
const shot = async (page: Page, name: string) => {
  if (SHOTS) await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true })
}

test.beforeAll(async () => {
  server = await startServer()
})
test.afterAll(async () => {
  await server?.stop()
})

const attachment = randomBytes(2048)

/** HTML whose scripts would leave three traces: the frame's title, a marker element, a request. */
function messageWithScript(to: string): string {
  const b64 = attachment.toString('base64').replace(/.{1,76}/g, '$&\r\n')
  return [
    'From: Build Bot <bot@example.com>',
    `To: ${to}`,
    'Subject: Your build passed',
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="outer"',
    '',
    '--outer',
    'Content-Type: multipart/alternative; boundary="alt"',
    '',
    '--alt',
    'Content-Type: text/plain; charset=utf-8',
    '',
    'Build 42 passed in 3 minutes.',
    '--alt',
    'Content-Type: text/html; charset=utf-8',
    '',
    '<h1 id="greeting">Build 42 passed</h1><p>All 318 tests are green.</p>',
    '<script>document.title = "script ran"; document.body.insertAdjacentHTML("beforeend", "<p id=ran>ran</p>"); fetch("/script-ran");</script>',
    '<img src="x" onerror="document.title = \'handler ran\'">',
    '--alt--',
    '--outer',
    'Content-Type: application/octet-stream; name="report.bin"',
    'Content-Disposition: attachment; filename="report.bin"',
    'Content-Transfer-Encoding: base64',
    '',
    b64,
    '--outer--',
    '',
  ].join('\r\n')
}

test('a message sent over SMTP appears live, its HTML runs no script, downloads match, delete works', async ({
  browser,
}) => {
  const context = await browser.newContext({
    baseURL: server.baseUrl,
    viewport: { width: 1280, height: 900 },
    acceptDownloads: true,
  })
  const page = await context.newPage()
  const requests: string[] = []
  page.on('request', (request) => requests.push(request.url()))
  const consoleErrors: string[] = []
  page.on('console', (message) => {
    if (message.type() === 'error') consoleErrors.push(message.text())
  })
  page.on('pageerror', (error) => consoleErrors.push(error.message))

  // Setup, then straight to the inboxes from the button the setup page offers.
  await page.goto(server.setupUrl)
  await page.getByLabel('Your email').fill('newcomer@example.com')
  await page.getByLabel('Password').fill('newcomer password 1')
  await page.getByLabel('Organisation name').fill('Acme QA')
  await page.getByRole('radio', { name: /Local testing/ }).check()
  await page.getByRole('button', { name: 'Create account, organisation and key' }).click()
  await page.getByRole('link', { name: 'Create an inbox and watch its mail' }).click()
  await expect(page.getByText('No inboxes yet.')).toBeVisible()
  await page.getByLabel('Address (optional)').fill('build-bot')
  await page.getByRole('button', { name: 'Create inbox' }).click()
  const address = 'build-bot@pigeonhole.test' // the default RECEIVING_DOMAIN
  await expect(page.getByRole('heading', { name: address })).toBeVisible()
  // The empty state gives the exact command, with this server's SMTP port.
  await expect(page.locator('#no-messages pre').filter({ hasText: 'swaks' })).toContainText(
    `swaks --server localhost:${server.smtpPort} --to ${address}`,
  )
  await expect(page.locator('#live-status')).toHaveText(/^Live:/)

  // Mail arrives; the list shows it without a reload.
  await page.evaluate(() => ((window as unknown as { sameDocument: boolean }).sameDocument = true))
  const raw = messageWithScript(address)
  const sent = await sendMail(server.smtpPort, { from: 'bot@example.com', to: [address] }, raw)
  expect(sent.data?.code).toBe(250)
  await expect(page.getByRole('link', { name: 'Your build passed' })).toBeVisible()
  expect(await page.evaluate(() => (window as unknown as { sameDocument?: boolean }).sameDocument)).toBe(true)
  await shot(page, 'inbox')

  // The message page: HTML in the sandboxed frame, its script inert.
  await page.getByRole('link', { name: 'Your build passed' }).click()
  await expect(page.getByRole('heading', { name: 'Your build passed' })).toBeVisible()
  const frame = page.frameLocator('iframe.message-html')
  await expect(frame.locator('#greeting')).toHaveText('Build 42 passed')
  await expect(page.locator('#message-text')).toContainText('Build 42 passed in 3 minutes.')
  await shot(page, 'message')
  // The attachment count in the summary opens the collapsed attachments.
  await page.getByRole('link', { name: '1 attachment' }).click()
  await expect(page.getByRole('cell', { name: 'report.bin' })).toBeVisible()
  const frameTitle = await frame.locator('title').count()
  expect(frameTitle).toBe(0)
  await expect(frame.locator('#ran')).toHaveCount(0)
  const html = page.frames().find((f) => f.url().endsWith('/html'))!
  expect(await html.title()).toBe('')
  expect(requests.filter((url) => url.includes('script-ran'))).toEqual([])
  // Chromium reports the refused script and handler (the frame's CSP allows only our measuring
  // script by its hash): positive proof they were refused, not merely slow.
  const scriptRefused = (text: string) =>
    text.startsWith(
      "Executing inline script violates the following Content Security Policy directive 'script-src 'sha256-",
    )
  const handlerRefused = (text: string) =>
    text.startsWith(
      "Executing inline event handler violates the following Content Security Policy directive 'script-src 'sha256-",
    )
  await expect.poll(() => consoleErrors.some(scriptRefused) && consoleErrors.some(handlerRefused)).toBe(true)
  expect(await page.title()).toBe('Your build passed · Acme QA · Pigeonhole')

  // Remote images: a second variant of the same sandboxed response.
  await page.getByRole('link', { name: 'Load remote images' }).click()
  await expect(page.locator('iframe.message-html')).toHaveAttribute('src', /\/html\?images=remote$/)
  await expect(page.getByRole('link', { name: 'Block remote images' })).toBeVisible()

  // Downloads: the source as received, the attachment as sent.
  const [source] = await Promise.all([
    page.waitForEvent('download'),
    page.getByRole('link', { name: 'Download source (.eml)' }).click(),
  ])
  expect(source.suggestedFilename()).toMatch(/^msg_[0-9a-f]{32}\.eml$/)
  expect(readFileSync((await source.path())!).toString()).toBe(raw)
  const [file] = await Promise.all([
    page.waitForEvent('download'),
    page.getByRole('link', { name: 'report.bin' }).click(),
  ])
  expect(file.suggestedFilename()).toBe('report.bin')
  expect(readFileSync((await file.path())!).equals(attachment)).toBe(true)

  // Delete (after the confirmation prompt): back to the empty inbox.
  page.once('dialog', (dialog) => dialog.accept())
  await page.getByRole('button', { name: 'Delete', exact: true }).click()
  await expect(page.getByRole('heading', { name: address })).toBeVisible()
  await expect(page.locator('#no-messages')).toBeVisible()

  // The inbox list with its usage; nothing but the message frame's refusals was reported.
  await page.getByRole('link', { name: 'Inboxes' }).click()
  await expect(page.locator('#usage-emails')).toHaveText(/^1 \//)
  await shot(page, 'inboxes')
  const frameRefusal = (text: string) =>
    scriptRefused(text) ||
    handlerRefused(text) ||
    text.includes('violates the following Content Security Policy directive: "img-src data: cid:')
  expect(consoleErrors.filter((text) => !frameRefusal(text) && !text.startsWith('Failed to load resource'))).toEqual([])
  await context.close()
})
