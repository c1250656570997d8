/**
 * Every view of a message on its page: the HTML rendered, its source highlighted, the text,
 * the headers, the raw source (in the page, not only as a download), and an image
 * attachment with a thumbnail.
 */
import { expect, test } from '@playwright/test'
import { createInbox, send, setUp } from './helpers.ts'
import { startServer, type E2eServer } from './server.ts'

let server: E2eServer

test.beforeAll(async () => {
  server = await startServer()
})
test.afterAll(async () => {
  await server?.stop()
})

/** A 2x2 red PNG. */
const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAFklEQVR4nGP4z8DAwMDAxMDAwMDAAAANHQEDasKb6QAAAABJRU5ErkJggg=='

test('the HTML, its highlighted source, the text, the headers, the raw source and an image thumbnail are all on the page', async ({
  browser,
}) => {
  const context = await browser.newContext({ baseURL: server.baseUrl })
  const page = await context.newPage()
  const problems: string[] = []
  page.on('pageerror', (error) => problems.push(error.message))
  const { orgPath } = await setUp(page, server)
  const { address } = await createInbox(page, orgPath, 'views')
  const raw = [
    'From: App <app@example.com>',
    `To: ${address}`,
    'Subject: Every view',
    'X-Test-Run: 4711',
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="m"',
    '',
    '--m',
    'Content-Type: multipart/alternative; boundary="a"',
    '',
    '--a',
    'Content-Type: text/plain; charset=utf-8',
    '',
    'Plain words.',
    '--a',
    'Content-Type: text/html; charset=utf-8',
    '',
    '<p class="lead">Rendered <b>words</b></p><!-- a comment -->',
    '--a--',
    '--m',
    'Content-Type: image/png; name="dot.png"',
    'Content-Disposition: attachment; filename="dot.png"',
    'Content-Transfer-Encoding: base64',
    '',
    PNG,
    '--m--',
    '',
  ].join('\r\n')
  await send(server, address, raw)
  await page.reload()
  await page.getByRole('link', { name: 'Every view' }).click()

  await expect(page.frameLocator('iframe.message-html').locator('p.lead')).toHaveText('Rendered words')
  await expect(page.locator('#message-text')).toHaveText('Plain words.')
  await expect(page.locator('table.headers')).toContainText('4711')
  await expect(page.locator('#view-headers')).toHaveJSProperty('open', false)

  // The HTML source, highlighted (tags and attribute values in their own spans), text only.
  await page.locator('#html-source summary').click()
  const htmlSource = page.frameLocator('#html-source iframe')
  await expect(htmlSource.locator('pre')).toHaveText('<p class="lead">Rendered <b>words</b></p><!-- a comment -->')
  await expect(htmlSource.locator('span.attr')).toHaveText(['"lead"'])
  await expect(htmlSource.locator('span.comment')).toHaveText(['<!-- a comment -->'])
  await expect(htmlSource.locator('p.lead')).toHaveCount(0)

  // The raw source as received, header names marked.
  await page.locator('#raw-source summary').click()
  const rawSource = page.frameLocator('#raw-source iframe')
  await expect(rawSource.locator('pre')).toContainText('X-Test-Run: 4711')
  await expect(rawSource.locator('pre')).toContainText(PNG)
  await expect(rawSource.locator('span.name').first()).toHaveText('From:')

  // The image attachment has a thumbnail that loaded (2 px wide), under the collapsed attachments.
  await page.locator('#view-attachments summary').click()
  const thumbnail = page.getByRole('img', { name: 'Preview of dot.png' })
  await expect(thumbnail).toBeVisible()
  await expect.poll(() => thumbnail.evaluate((img: HTMLImageElement) => img.naturalWidth)).toBe(2)
  expect(problems).toEqual([])
  await context.close()
})
