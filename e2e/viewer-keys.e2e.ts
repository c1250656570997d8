/**
 * The message viewer's preview widths (phone, tablet, desktop), dark mode following the
 * system setting, and the keyboard shortcuts for next/previous message, the views and delete.
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

test('preview widths, dark mode from the system setting, and keyboard shortcuts', async ({ browser }) => {
  test.setTimeout(120_000)
  const context = await browser.newContext({ baseURL: server.baseUrl, viewport: { width: 1280, height: 900 } })
  const page = await context.newPage()
  const { orgPath } = await setUp(page, server)
  const { address, path: inboxPath } = await createInbox(page, orgPath, 'keys')
  for (const subject of ['First', 'Second', 'Third']) {
    await send(
      server,
      address,
      simpleMessage(address, subject, { html: `<p>${subject} body</p>`, text: `${subject} text. Code: 551234` }),
    )
  }
  await page.goto(inboxPath)
  await expect(page.locator('#message-list a[href*="/messages/"]')).toHaveCount(3)

  // Inbox: j moves through the list (newest first), Enter opens.
  await page.keyboard.press('j')
  await page.keyboard.press('j')
  await expect(page.getByRole('link', { name: 'Second', exact: true })).toBeFocused()
  await page.keyboard.press('Enter')
  await expect(page.getByRole('heading', { name: 'Second' })).toBeVisible()

  // A heading can show before the page's deferred script has bound the keys: each key below
  // waits for the page it lands on to have run its scripts (DOMContentLoaded).
  const shows = async (subject: string) => {
    await expect(page.getByRole('heading', { name: subject })).toBeVisible()
    await page.waitForLoadState('domcontentloaded')
  }
  await page.waitForLoadState('domcontentloaded')

  // Message: j older, k newer, u back to the inbox.
  await page.keyboard.press('j')
  await shows('First')
  await page.keyboard.press('k')
  await shows('Second')
  await page.keyboard.press('k')
  await shows('Third')
  // Views: 4 opens the raw source, 3 the HTML source.
  await page.keyboard.press('4')
  await expect(page.locator('#raw-source')).toHaveJSProperty('open', true)
  await expect(page.frameLocator('#raw-source iframe').locator('pre')).toContainText('Subject: Third')
  await page.keyboard.press('3')
  await expect(page.locator('#html-source')).toHaveJSProperty('open', true)
  // Keys typed into a field are text, not shortcuts.
  await page.getByLabel('Code 551234').focus()
  await page.keyboard.press('j')
  await shows('Third')
  await page.getByLabel('Code 551234').blur()

  // Preview widths.
  const frame = page.locator('iframe.message-html')
  await page.getByRole('link', { name: 'Phone (375 px)' }).click()
  await expect.poll(async () => (await frame.boundingBox())?.width).toBe(375)
  await page.getByRole('link', { name: 'Tablet (768 px)' }).click()
  await expect.poll(async () => (await frame.boundingBox())?.width).toBe(768)
  await page.getByRole('link', { name: 'Desktop (full width)' }).click()
  await expect.poll(async () => (await frame.boundingBox())?.width).toBeGreaterThan(900)

  // Delete with # (after the prompt): back on the inbox, two left.
  page.once('dialog', (dialog) => dialog.accept())
  await page.keyboard.press('#')
  await expect(page.getByRole('heading', { name: address })).toBeVisible()
  await expect(page.locator('#message-list a[href*="/messages/"]')).toHaveCount(2)

  // Dark mode follows the system setting; light stays light.
  const background = () => page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor)
  expect(await background()).toBe('rgb(246, 247, 249)')
  await page.emulateMedia({ colorScheme: 'dark' })
  expect(await background()).toBe('rgb(13, 17, 23)')
  await context.close()
})
