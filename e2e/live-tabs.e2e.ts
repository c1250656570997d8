/**
 * Seven inbox tabs of one browser all load, the console stays usable beside them, and new
 * mail reaches every one of them live: the tabs share one stream (a SharedWorker), where
 * one stream per tab used up the browser's six connections to the host.
 */
import { expect, test } from '@playwright/test'
import { send, setUp, simpleMessage } from './helpers.ts'
import { startServer, type E2eServer } from './server.ts'

let server: E2eServer

test.beforeAll(async () => {
  server = await startServer()
})
test.afterAll(async () => {
  await server?.stop()
})

test('seven open inbox tabs of one browser all load and all show new mail live', async ({ browser }) => {
  test.setTimeout(120_000)
  const context = await browser.newContext({ baseURL: server.baseUrl })
  const first = await context.newPage()
  const { apiKey, orgPath } = await setUp(first, server)
  const inboxes: { id: string; address: string }[] = []
  for (let i = 1; i <= 7; i++) {
    const response = await fetch(`${server.baseUrl}/v1/inboxes`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ prefix: `tab-${i}` }),
    })
    expect(response.status).toBe(201)
    inboxes.push(((await response.json()) as { data: { id: string; address: string } }).data)
  }
  const tabs = [first]
  for (let i = 1; i < 7; i++) tabs.push(await context.newPage())
  for (const [i, tab] of tabs.entries()) {
    await tab.goto(`${orgPath}/inboxes/${inboxes[i]!.id}`, { timeout: 10_000 })
    await expect(tab.locator('#live-status')).toHaveText(/^Live:/, { timeout: 10_000 })
  }
  // Another console page still loads beside them.
  const other = await context.newPage()
  await other.goto(`${orgPath}/keys`, { timeout: 10_000 })
  await expect(other.getByRole('heading', { name: 'API keys' })).toBeVisible()

  // Mail to the first and the last tab's inbox shows in each, without a reload; only there.
  await send(server, inboxes[0]!.address, simpleMessage(inboxes[0]!.address, 'For tab one'))
  await send(server, inboxes[6]!.address, simpleMessage(inboxes[6]!.address, 'For tab seven'))
  await expect(tabs[0]!.getByRole('link', { name: 'For tab one' })).toBeVisible()
  await expect(tabs[6]!.getByRole('link', { name: 'For tab seven' })).toBeVisible()
  await expect(tabs[3]!.locator('#no-messages')).toBeVisible()

  // Closing tabs shrinks the shared stream; the rest stay live.
  for (const tab of tabs.slice(1, 6)) await tab.close()
  await send(server, inboxes[0]!.address, simpleMessage(inboxes[0]!.address, 'Still live'))
  await expect(tabs[0]!.getByRole('link', { name: 'Still live' })).toBeVisible()
  await context.close()
})
