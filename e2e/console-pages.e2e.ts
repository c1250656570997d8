/**
 * Every signed-in page in a real browser: reloading a page that shows a value once does
 * not repeat its action, no page scrolls sideways at phone width (390 px) or in a desktop
 * window, and axe finds no serious or critical accessibility violation.
 */
import { expect, test, type Browser, type BrowserContext, type Page } from '@playwright/test'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { createInbox, send, setUp, simpleMessage } from './helpers.ts'
import { startServer, type E2eServer } from './server.ts'

let server: E2eServer
let signedIn: Awaited<ReturnType<BrowserContext['storageState']>>
let orgPath: string
let inboxPath: string

test.beforeAll(async ({ browser }) => {
  server = await startServer()
  const context = await browser.newContext({ baseURL: server.baseUrl })
  const page = await context.newPage()
  ;({ orgPath } = await setUp(page, server))
  const inbox = await createInbox(page, orgPath, 'pages')
  inboxPath = inbox.path
  await send(
    server,
    inbox.address,
    simpleMessage(inbox.address, 'Welcome aboard', {
      html: '<p>Hello <a href="https://app.example/confirm?t=1">confirm</a></p>',
      text: 'Hello https://app.example/confirm?t=1',
    }),
  )
  signedIn = await context.storageState()
  await context.close()
})
test.afterAll(async () => {
  await server?.stop()
})

const open = (browser: Browser, width = 1280) =>
  browser.newContext({ baseURL: server.baseUrl, storageState: signedIn, viewport: { width, height: 800 } })

test('reloading after "Create key" or "Create invite link" shows the same value and makes nothing new', async ({
  browser,
}) => {
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

/**
 * Every page a signed-in owner and operator can reach, with the values this server made.
 * It works in the caller's page and leaves it open: closing a context's last page and
 * opening another at once sometimes fails in Chromium ("Failed to open a new tab"), as
 * the context's window goes away with its last tab.
 */
async function signedInPages(page: Page): Promise<string[]> {
  await page.goto(inboxPath)
  const messageHref = new URL((await page.locator('#message-list a').first().getAttribute('href'))!, page.url())
    .pathname
  await page.goto(`${orgPath}/keys`)
  await page.getByLabel('Name').fill(`a-key-name-with-no-spaces-${'x'.repeat(70)}`)
  await page.getByRole('button', { name: 'Create key' }).click()
  const keyShown = new URL(page.url()).pathname + new URL(page.url()).search
  await page.goto(`${orgPath}/members`)
  await page.getByRole('button', { name: 'Create invite link' }).click()
  const inviteShown = new URL(page.url()).pathname + new URL(page.url()).search
  const org = orgPath.split('/').at(-1)
  return [
    '/console',
    orgPath,
    `${orgPath}/inboxes`,
    inboxPath,
    messageHref!,
    `${messageHref}/html-check`,
    `${orgPath}/members`,
    `${orgPath}/keys`,
    keyShown,
    inviteShown,
    `${orgPath}/audit`,
    '/console/account',
    '/console/admin',
    `/console/admin/orgs/${org}`,
  ]
}

test('no signed-in page scrolls sideways at 390 px, Sign out stays on screen, and the audit log fits a 1,280 px window', async ({
  browser,
}) => {
  test.setTimeout(120_000)
  const phone = await open(browser, 390)
  const page = await phone.newPage()
  const paths = await signedInPages(page)
  const wide: string[] = []
  for (const path of paths) {
    await page.goto(path)
    const { scroll, inner } = await page.evaluate(() => ({
      scroll: document.documentElement.scrollWidth,
      inner: window.innerWidth,
    }))
    if (scroll > inner) {
      const culprits = await page.evaluate(() =>
        [...document.querySelectorAll('body *')]
          .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1)
          .map((e) => `${e.tagName.toLowerCase()}.${e.className}#${e.id}`)
          .slice(0, 5)
          .join(' '),
      )
      wide.push(`${path}: ${scroll}px (${culprits})`)
    }
    const signOut = page.getByRole('button', { name: 'Sign out', exact: true })
    await expect(signOut).toBeInViewport({ ratio: 1 })
  }
  expect(wide).toEqual([])
  await phone.close()

  const desktop = await open(browser, 1280)
  const audit = await desktop.newPage()
  await audit.goto(`${orgPath}/audit`)
  await expect(audit.locator('table.audit')).toContainText('a-key-name-with-no-spaces')
  expect(await audit.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(1280)
  await desktop.close()
})

test('axe finds no serious or critical violation on any page', async ({ browser }) => {
  test.setTimeout(240_000) // axe over 16 pages takes about 40 s on an idle machine
  const axe = readFileSync(fileURLToPath(import.meta.resolve('axe-core/axe.min.js')), 'utf8')
  const context = await open(browser)
  const page = await context.newPage()
  const paths = await signedInPages(page)
  const anonymous = await browser.newContext({ baseURL: server.baseUrl })
  const stranger = await anonymous.newPage()
  const found: string[] = []
  const check = async (target: typeof page, path: string) => {
    await target.goto(path)
    await target.evaluate(axe)
    const violations = await target.evaluate(async () => {
      const result = await (
        window as unknown as {
          axe: {
            run(o: object): Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }>
          }
        }
      ).axe.run({
        resultTypes: ['violations'],
      })
      return result.violations
        .filter((v) => v.impact === 'serious' || v.impact === 'critical')
        .map((v) => `${v.id} (${v.impact}) at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)
    })
    for (const violation of violations) found.push(`${path}: ${violation}`)
  }
  for (const path of paths) await check(page, path)
  const invite = await page.goto(paths.find((p) => p.includes('/invites/created'))!)
  expect(invite?.ok()).toBe(true)
  const inviteLink = await page.getByLabel('Invite link').inputValue()
  for (const path of ['/console/sign-in', new URL(inviteLink).pathname, '/console/no-such-page'])
    await check(stranger, path)
  expect(found).toEqual([])
  await anonymous.close()
  await context.close()
})
