/**
 * Theme: light, dark or as the system, chosen on the account page and remembered by the
 * browser (every page, after a reload), whatever the system prefers. Notifications: asked
 * for on an inbox page, then new mail raises one while the tab is not looked at.
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

const DARK_BG = 'rgb(13, 17, 23)'
const LIGHT_BG = 'rgb(246, 247, 249)'

test('the theme is chosen, remembered, and beats the system preference both ways', async ({ browser }) => {
  test.setTimeout(120_000)
  const context = await browser.newContext({ baseURL: server.baseUrl, colorScheme: 'light' })
  const page = await context.newPage()
  const { orgPath } = await setUp(page, server)
  const background = () => page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor)
  expect(await background()).toBe(LIGHT_BG)

  await page.goto('/console/account')
  await page.getByLabel('Dark').check()
  await page.getByRole('button', { name: 'Save theme' }).click()
  await expect(page.locator('html')).toHaveAttribute('data-theme', 'dark')
  expect(await background()).toBe(DARK_BG)
  await page.goto(`${orgPath}/inboxes`)
  expect(await background()).toBe(DARK_BG)
  // Secondary and danger buttons keep their own colours in the chosen dark theme.
  await expect(page.getByRole('button', { name: 'Filter', exact: true })).not.toHaveCSS('color', 'rgb(13, 17, 23)')
  await page.reload()
  expect(await background()).toBe(DARK_BG)

  // Light, on a system that prefers dark.
  await page.emulateMedia({ colorScheme: 'dark' })
  await page.goto('/console/account')
  await expect(page.getByLabel('Dark')).toBeChecked()
  await page.getByLabel('Light').check()
  await page.getByRole('button', { name: 'Save theme' }).click()
  expect(await background()).toBe(LIGHT_BG)
  // As the system: the preference decides again.
  await page.getByLabel('As the system').check()
  await page.getByRole('button', { name: 'Save theme' }).click()
  await expect(page.locator('html')).not.toHaveAttribute('data-theme', /./)
  expect(await background()).toBe(DARK_BG)
  await page.emulateMedia({ colorScheme: 'light' })
  expect(await background()).toBe(LIGHT_BG)
  await context.close()
})

test('notifications: asked for on the inbox page, raised by new mail while the tab is not looked at', async ({
  browser,
}) => {
  test.setTimeout(120_000)
  // A server of its own: the first test used this one's setup link.
  const own = await startServer()
  const context = await browser.newContext({ baseURL: own.baseUrl })
  await context.grantPermissions(['notifications'], { origin: own.baseUrl })
  // Record what the page would show, and make the tab one the person is not looking at.
  await context.addInitScript(() => {
    const shown: { title: string; body?: string }[] = []
    ;(window as unknown as { shown: typeof shown }).shown = shown
    class Recorder {
      static permission = 'granted'
      static requestPermission = async () => 'granted'
      constructor(title: string, options?: { body?: string }) {
        shown.push({ title, body: options?.body })
      }
    }
    ;(window as unknown as { Notification: unknown }).Notification = Recorder
    document.hasFocus = () => false
  })
  const page = await context.newPage()
  const { orgPath } = await setUp(page, own)
  const { address, path } = await createInbox(page, orgPath, 'notify')
  await page.goto(path)
  const toggle = page.getByRole('button', { name: 'Notify me of new mail' })
  await toggle.click()
  await expect(page.locator('#notify-toggle')).toHaveText('Notifications on (turn off)')
  await expect(page.locator('#live-status')).toContainText('Live')
  await send(own, address, simpleMessage(address, 'Your code is 123456'))
  await expect(page.locator('#message-list tbody tr')).toHaveCount(1)
  await expect
    .poll(() => page.evaluate(() => (window as unknown as { shown: { title: string; body?: string }[] }).shown))
    .toEqual([{ title: 'New mail: Your code is 123456', body: address }])
  // Remembered in this browser; turned off, nothing more is shown.
  await page.reload()
  await expect(page.locator('#notify-toggle')).toHaveText('Notifications on (turn off)')
  await page.locator('#notify-toggle').click()
  await expect(page.locator('#notify-toggle')).toHaveText('Notify me of new mail')
  await send(own, address, simpleMessage(address, 'Second'))
  await expect(page.locator('#message-list tbody tr')).toHaveCount(2)
  expect(await page.evaluate(() => (window as unknown as { shown: unknown[] }).shown)).toEqual([])
  await context.close()
  await own.stop()
})
