/**
 * /openapi renders in a real browser with every other host cut off: the viewer draws all
 * ten operations from /openapi/json and asks nothing of the network beyond this server.
 * Needs Chromium (.ci/run installs Debian's; CHROMIUM_PATH points elsewhere).
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { type Browser, chromium } from '@playwright/test'
import { startTestServer, type TestServer } from '../support/harness.ts'

let server: TestServer
let browser: Browser
beforeAll(async () => {
  server = await startTestServer()
  const executablePath = process.env.CHROMIUM_PATH ?? Bun.which('chromium') ?? undefined
  if (!executablePath) throw new Error('Chromium not found: install it (apt-get install chromium) or set CHROMIUM_PATH')
  browser = await chromium.launch({ executablePath })
})
afterAll(async () => {
  await browser?.close()
  await server.stop()
})

test('the page draws all ten operations with no request to another host', async () => {
  const page = await browser.newPage()
  const foreign: string[] = []
  const origin = new URL(server.url).origin
  await page.route('**/*', (route) => {
    const url = route.request().url()
    if (url.startsWith(`${origin}/`) || url.startsWith('data:')) return route.continue()
    foreign.push(url)
    return route.abort()
  })
  const errors: string[] = []
  page.on('pageerror', (error) => errors.push(error.message))
  await page.goto(`${server.url}/openapi`)
  await page.locator('.opblock').nth(9).waitFor()
  expect(await page.locator('.opblock').count()).toBe(10)
  expect(await page.locator('.opblock-summary-path').allTextContents()).toContain('/v1/inboxes/{inbox_id}/messages')
  expect(await page.locator('.info .title').first().textContent()).toContain('Pigeonhole')
  expect(foreign).toEqual([])
  expect(errors).toEqual([])
  await page.close()
}, 30_000)
