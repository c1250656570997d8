/**
 * The checks a tester runs on a message from its page: HTML support by email client
 * (caniemail's data), scored per client family, each feature not supported everywhere
 * listed with the lines of the HTML where it occurs.
 */
import { expect, test } from '@playwright/test'
import { createInbox, send, setUp, simpleMessage } from './helpers.ts'
import { startServer, type E2eServer } from './server.ts'

let server: E2eServer

test.beforeAll(async () => {
  server = await startServer()
})
test.afterAll(async () => {
  await server?.stop()
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
