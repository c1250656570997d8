/**
 * The Inboxes page moves as mail arrives (message and unread counts, no reload) and finds an
 * inbox by part of its address; an open inbox shows its unread count in the tab's title and
 * as a badge on the favicon, also for mail that arrives while it is open.
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

test('live counts and an address filter on the Inboxes page; the unread badge of an open inbox', async ({
  browser,
}) => {
  test.setTimeout(120_000)
  const context = await browser.newContext({ baseURL: server.baseUrl, viewport: { width: 1280, height: 900 } })
  const page = await context.newPage()
  const { orgPath } = await setUp(page, server)
  const signup = await createInbox(page, orgPath, 'signup-flow')
  await createInbox(page, orgPath, 'password-reset')
  await createInbox(page, orgPath, 'signup-retry')

  // Live: the counts of the listed inbox move without a reload.
  await page.goto(`${orgPath}/inboxes`)
  const row = page.locator(`tr[data-inbox="${signup.address}"]`)
  await expect(row.locator('td.count')).toHaveText('0')
  await expect(page.locator('#live-status')).toContainText('Live')
  const before = await page.evaluate(() => performance.getEntriesByType('navigation').length)
  await send(server, signup.address, simpleMessage(signup.address, 'Welcome'))
  await expect(row.locator('td.count')).toHaveText('1')
  await expect(row.locator('td.unread')).toHaveText('1')
  await send(server, signup.address, simpleMessage(signup.address, 'Welcome again'))
  await expect(row.locator('td.count')).toHaveText('2')
  expect(await page.evaluate(() => performance.getEntriesByType('navigation').length)).toBe(before) // no reload

  // The address filter: a part of the address, any case; the URL carries it; "All inboxes" clears it.
  await page.getByLabel('Address contains').fill('SIGNUP')
  await page.getByRole('button', { name: 'Filter', exact: true }).click()
  await expect(page.locator('tr[data-inbox]')).toHaveCount(2)
  expect(new URL(page.url()).searchParams.get('address')).toBe('SIGNUP')
  await page.getByLabel('Address contains').fill('nothing-like-it')
  await page.getByRole('button', { name: 'Filter', exact: true }).click()
  await expect(page.locator('#no-inboxes')).toContainText('nothing-like-it')
  await page.getByRole('link', { name: 'All inboxes' }).click()
  await expect(page.locator('tr[data-inbox]')).toHaveCount(3)
  expect((await page.request.get(`${orgPath}/inboxes?address=${encodeURIComponent('a\u0000b')}`)).status()).toBe(400)

  // An open inbox: its unread count in the title and on the favicon, moving with new mail.
  await page.goto(signup.path)
  await expect(page).toHaveTitle(/^\(2\) /)
  const icon = page.locator('link[rel="icon"]')
  await expect(icon).toHaveAttribute('href', /^data:image\/png;base64,/)
  const iconBefore = await icon.getAttribute('href')
  await send(server, signup.address, simpleMessage(signup.address, 'Third'))
  await expect(page).toHaveTitle(/^\(3\) /)
  await expect(page.locator('#inbox-unread')).toHaveText('3 unread')
  expect(await icon.getAttribute('href')).not.toBe(iconBefore)
  // All read: no count, no badge.
  await page.getByLabel('All on this page').check()
  await page.getByRole('button', { name: 'Mark read' }).click()
  await expect(page.locator('#inbox-unread')).toHaveText('0 unread')
  await expect(page).not.toHaveTitle(/^\(/)
  await expect(icon).toHaveAttribute('href', 'data:,')
  await context.close()
})
