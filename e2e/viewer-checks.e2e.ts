/**
 * The checks a tester runs on a message from its page: HTML support by email client
 * (caniemail's data), scored per client family, each feature not supported everywhere
 * listed with the lines of the HTML where it occurs; and the spam check against a real
 * rspamd started here (GTUBE is spam, a plain message is not, a filter that is down is
 * one clear line and never a 500).
 */
import { expect, test } from '@playwright/test'
import { createInbox, OWNER, send, setUp, simpleMessage } from './helpers.ts'
import { type Rspamd, rspamdInstalled, startRspamd } from './rspamd.ts'
import { freePort, startServer, type E2eServer } from './server.ts'

let server: E2eServer
let rspamd: Rspamd | null = null

test.beforeAll(async () => {
  test.setTimeout(180_000) // rspamd compiles its rules when it starts
  rspamd = rspamdInstalled() ? await startRspamd() : null
  // Without rspamd the setting names a port nobody listens on: the page must still answer.
  const filter = rspamd?.url ?? `http://127.0.0.1:${await freePort()}`
  server = await startServer({ CONSOLE_SPAM_CHECK: `rspamd:${filter}` })
})
test.afterAll(async () => {
  await server?.stop()
  await rspamd?.stop()
})

test('HTML support: a score per client family and each unsupported feature with where it occurs', async ({ browser }) => {
  const context = await browser.newContext({ baseURL: server.baseUrl })
  const page = await context.newPage()
  const { orgPath } = await setUp(page, server)
  const { address } = await createInbox(page, orgPath, 'checks')
  const html = [
    '<!doctype html>',
    '<html><head><style>',
    '.row { display: flex; }',
    '@media (prefers-color-scheme: dark) { body { background: #000 } }',
    '</style></head><body>',
    '<table><tr><td style="padding: 8px">Plain table</td></tr></table>',
    '<video src="https://cdn.example/intro.mp4"></video>',
    '<div class="row" style="background-image: linear-gradient(#fff, #eee)">Row</div>',
    '</body></html>',
  ].join('\n')
  await send(server, address, simpleMessage(address, 'Feature mail', { html }))
  await page.reload()
  await page.getByRole('link', { name: 'Feature mail' }).click()
  await page.getByRole('link', { name: 'HTML support' }).click()
  await expect(page.getByRole('heading', { name: 'HTML support by email client' })).toBeVisible()

  // A score for each major family; Outlook (Windows: no video, no flex, no gradient) scores below Apple Mail.
  const score = async (family: string) => Number((await page.locator(`tr[data-family="${family}"] td`).textContent())!.replace('%', ''))
  for (const family of ['gmail', 'apple-mail', 'outlook', 'yahoo']) expect(await score(family)).toBeGreaterThanOrEqual(0)
  expect(await score('outlook')).toBeLessThan(await score('apple-mail'))

  // Each unsupported feature, with its line in the HTML and the platforms that lack it.
  const video = page.locator('li[data-feature="html-video"]')
  await expect(video).toContainText('line 7 of the HTML')
  await expect(video).toContainText(/Outlook: not on Windows/)
  await expect(page.locator('li[data-feature="css-display-flex"]')).toContainText('line 3 of the HTML')
  await expect(page.locator('li[data-feature="css-at-media-prefers-color-scheme"]')).toContainText('line 4 of the HTML')
  await expect(page.locator('li[data-feature="css-linear-gradient"]')).toContainText('line 8 of the HTML')
  await expect(page.locator('li[data-feature="html-video"] > a')).toHaveAttribute('href', 'https://www.caniemail.com/features/html-video/')
  // A GET page: reloading shows the same result.
  await page.reload()
  await expect(page.locator('li[data-feature="html-video"]')).toBeVisible()
  await context.close()
})

/** The standard test string every spam filter must score as spam. */
const GTUBE = 'XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X'

test('spam check: GTUBE is spam, a plain message is not, and a filter that is down is one clear line', async ({ browser }) => {
  test.skip(rspamd === null, 'rspamd is not installed (apt-get install rspamd); CI installs it')
  const context = await browser.newContext({ baseURL: server.baseUrl })
  const page = await context.newPage()
  await page.goto('/console/sign-in')
  await page.getByLabel('Email').fill(OWNER.email)
  await page.getByLabel('Password').fill(OWNER.password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  const { address } = await createInbox(page, new URL(page.url()).pathname, 'spam')
  const plain = [
    'From: Alice <alice@example.com>',
    `To: ${address}`,
    'Subject: Lunch tomorrow',
    'Date: Sat, 28 Nov 2026 12:00:00 +0000',
    'Message-ID: <lunch-1@example.com>',
    'Content-Type: text/plain; charset=utf-8',
    '',
    'Shall we have lunch tomorrow at noon? The usual place.',
    '',
  ].join('\r\n')
  await send(server, address, plain)
  await send(server, address, simpleMessage(address, 'Test of the filter', { text: `This is the GTUBE, a test message.\r\n\r\n${GTUBE}\r\n` }))
  await page.reload()

  // GTUBE: spam, with the rule that fired.
  await page.getByRole('link', { name: 'Test of the filter' }).click()
  const messageUrl = page.url()
  await page.getByRole('link', { name: 'Spam check' }).click()
  await expect(page.locator('#spam-verdict')).toContainText('Spam:')
  await expect(page.locator('tr[data-rule="GTUBE"]')).toBeVisible()
  expect(Number(await page.locator('#spam-score').textContent())).toBeGreaterThanOrEqual(15)

  // The plain message: not spam, with its score and rules listed.
  await page.goto(messageUrl)
  await page.locator('#back-to-inbox').click()
  await page.getByRole('link', { name: 'Lunch tomorrow' }).click()
  await page.getByRole('link', { name: 'Spam check' }).click()
  await expect(page.locator('#spam-verdict')).toContainText('Not spam:')
  expect(Number(await page.locator('#spam-score').textContent())).toBeLessThan(15)
  await expect(page.locator('table.spam-rules tbody tr').first()).toBeVisible()

  // The filter down: one clear line on the page, 503, never a 500.
  await rspamd!.stop()
  rspamd = null
  const response = await page.goto(`${messageUrl}/spam-check`)
  expect(response!.status()).toBe(503)
  await expect(page.locator('#spam-unavailable')).toContainText('The spam filter (rspamd at http://127.0.0.1:')
  await expect(page.locator('#spam-unavailable')).toContainText('could not connect')
  await context.close()
})
