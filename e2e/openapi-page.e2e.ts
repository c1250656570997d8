/**
 * /openapi renders in a real browser with every other host cut off: the viewer draws all
 * ten operations from /openapi/json and asks nothing of the network beyond this server.
 * Part of `bun run test:browser` (Chromium needed), not of `bun test`, which needs Bun alone.
 */
import { expect, test } from '@playwright/test'
import { startServer, type E2eServer } from './server.ts'

let server: E2eServer
test.beforeAll(async () => {
  server = await startServer()
})
test.afterAll(async () => {
  await server?.stop()
})

test('the page draws all ten operations with no request to another host', async ({ page }) => {
  const foreign: string[] = []
  const origin = new URL(server.baseUrl).origin
  await page.route('**/*', (route) => {
    const url = route.request().url()
    if (url.startsWith(`${origin}/`) || url.startsWith('data:')) return route.continue()
    foreign.push(url)
    return route.abort()
  })
  const errors: string[] = []
  page.on('pageerror', (error) => errors.push(error.message))
  await page.goto(`${server.baseUrl}/openapi`)
  await page.locator('.opblock').nth(9).waitFor()
  await expect(page.locator('.opblock')).toHaveCount(10)
  expect(await page.locator('.opblock-summary-path').allTextContents()).toContain('/v1/inboxes/{inbox_id}/messages')
  expect(await page.locator('.info .title').first().textContent()).toContain('Pigeonhole')
  expect(foreign).toEqual([])
  expect(errors).toEqual([])
})
