/**
 * The console in a real browser: setup from the printed link, the first key (copy button),
 * sign-out and sign-in, an invite joined by a second user in another browser, a key
 * created and used against /v1, revoked (401), and sign-out. The CSP must never fire.
 */
import { expect, test, type Page } from '@playwright/test'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startServer, type E2eServer } from './server.ts'

let server: E2eServer
const OPERATOR = { email: 'operator@example.com', password: 'operator password 1' }
const SECOND = { email: 'second@example.com', password: 'second password 22' }
// CONSOLE_SCREENSHOTS=1 writes the docs' screenshots while the suite runs.
const SHOTS = process.env.CONSOLE_SCREENSHOTS ? fileURLToPath(new URL('../docs/console', import.meta.url)) : null

test.beforeAll(async () => {
  server = await startServer()
  if (SHOTS) mkdirSync(SHOTS, { recursive: true })
})
test.afterAll(async () => {
  await server?.stop()
})

const shot = async (page: Page, name: string) => {
  if (SHOTS) await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true })
}

/** Collects CSP violations and script errors (a 401 or 404 document is expected in places). */
function watchForViolations(page: Page): string[] {
  const problems: string[] = []
  page.on('console', (message) => {
    if (message.type() === 'error' && !message.text().startsWith('Failed to load resource'))
      problems.push(message.text())
  })
  page.on('pageerror', (error) => problems.push(error.message))
  return problems
}

const api = (path: string, key: string, init: RequestInit = {}) =>
  fetch(`${server.baseUrl}${path}`, { ...init, headers: { authorization: `Bearer ${key}` } })

test('setup, keys, an invited member, revocation and sign-out', async ({ browser }) => {
  const context = await browser.newContext({ baseURL: server.baseUrl, viewport: { width: 1280, height: 900 } })
  await context.grantPermissions(['clipboard-read', 'clipboard-write'])
  const page = await context.newPage()
  const problems = watchForViolations(page)

  // 1. Setup from the link the server printed.
  await page.goto(server.setupUrl)
  await expect(page.getByRole('heading', { name: 'Set up Pigeonhole' })).toBeVisible()
  await page.getByLabel('Your email').fill(OPERATOR.email)
  await page.getByLabel('Password').fill(OPERATOR.password)
  await page.getByLabel('Organisation name').fill('Acme QA')
  await shot(page, 'setup')
  await page.getByRole('radio', { name: /Local testing/ }).check()
  await page.getByRole('button', { name: 'Create account, organisation and key' }).click()
  const firstKey = await page.getByLabel('Your API key').inputValue()
  expect(firstKey).toMatch(/^ph_live_[0-9a-f]{16}_[0-9a-f]{48}$/)
  await page.getByRole('button', { name: 'Copy' }).click()
  await expect(page.getByRole('button', { name: 'Copied' })).toBeVisible()
  expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(firstKey)
  expect((await api('/v1/usage', firstKey)).status).toBe(200)
  // The link is spent.
  expect((await page.request.get(server.setupUrl)).status()).toBe(404)

  // 2. The organisation's overview; sign out and back in.
  await page.getByRole('link', { name: 'Open the organisation' }).click()
  await expect(page.getByRole('heading', { name: 'Acme QA' })).toBeVisible()
  await shot(page, 'overview')
  await page.getByRole('button', { name: 'Sign out' }).click()
  await expect(page.getByRole('heading', { name: 'Sign in' })).toBeVisible()
  await page.getByLabel('Email').fill(OPERATOR.email)
  await page.getByLabel('Password').fill('not the password')
  await page.getByRole('button', { name: 'Sign in' }).click()
  await expect(page.getByText('Wrong email or password.')).toBeVisible()
  await page.getByLabel('Password').fill(OPERATOR.password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await expect(page.getByRole('heading', { name: 'Acme QA' })).toBeVisible()

  // 3. Invite a member; they join in another browser.
  await page.getByRole('link', { name: 'Members' }).click()
  await page.getByRole('button', { name: 'Create invite link' }).click()
  const inviteLink = await page.getByLabel('Invite link').inputValue()
  await page.getByRole('link', { name: 'Back to members' }).click()
  await shot(page, 'members')
  const other = await browser.newContext({ baseURL: server.baseUrl })
  const second = await other.newPage()
  const secondProblems = watchForViolations(second)
  await second.goto(inviteLink)
  await expect(second.getByRole('heading', { name: 'Join Acme QA' })).toBeVisible()
  await second.getByLabel('Your email').fill(SECOND.email)
  await second.getByLabel('Choose a password').fill(SECOND.password)
  await second.getByRole('button', { name: 'Create account and join' }).click()
  await expect(second.getByRole('heading', { name: 'Acme QA' })).toBeVisible()
  await expect(second.getByRole('link', { name: 'Audit log' })).toHaveCount(0) // members do not see it
  await page.reload()
  await expect(page.locator('[data-member="second@example.com"]')).toContainText('member')

  // 4. A named key, used against /v1, then revoked: 401 on the next request.
  await page.getByRole('link', { name: 'API keys' }).click()
  await page.getByLabel('Name').fill('CI')
  await page.getByRole('button', { name: 'Create key' }).click()
  const ciKey = await page.getByLabel('API key', { exact: true }).inputValue()
  const created = await api('/v1/inboxes', ciKey, { method: 'POST' })
  expect(created.status).toBe(201)
  await page.goto(`${new URL(page.url()).pathname}`)
  const row = page.locator(`[data-key="${ciKey.slice(8, 24)}"]`)
  await expect(row).toContainText('CI')
  await expect(row).not.toContainText('never') // last used is shown
  await shot(page, 'keys')
  page.once('dialog', (dialog) => dialog.accept())
  await row.getByRole('button', { name: 'Revoke' }).click()
  await expect(row).toContainText('revoked')
  expect((await api('/v1/usage', ciKey)).status).toBe(401)

  // 5. The owner's audit log shows it all.
  await page.getByRole('link', { name: 'Audit log' }).click()
  for (const action of ['key.created', 'key.revoked', 'member.invited', 'member.joined'])
    await expect(page.locator(`[data-action="${action}"]`).first()).toBeVisible()
  await shot(page, 'audit')
  await page.getByRole('link', { name: 'Operator', exact: true }).click()
  await shot(page, 'operator')

  // 6. Sign out: the console asks for sign-in again.
  await second.getByRole('button', { name: 'Sign out' }).click()
  await expect(second.getByRole('heading', { name: 'Sign in' })).toBeVisible()
  await second.goto('/console')
  await expect(second.getByRole('heading', { name: 'Sign in' })).toBeVisible()

  expect(problems).toEqual([])
  expect(secondProblems).toEqual([])
  await other.close()
  await context.close()
})
