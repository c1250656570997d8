/**
 * The inbox lists as a developer uses them: filter an inbox's messages (subject, sender,
 * date), page past the newest 100, delete one message from the list, empty the inbox;
 * the inbox list shows each inbox's message count and last arrival, and searches all inboxes.
 */
import { expect, test } from '@playwright/test'
import { SmtpClient } from '../test/support/smtp.ts'
import { createInbox, setUp, simpleMessage } from './helpers.ts'
import { startServer, type E2eServer } from './server.ts'

let server: E2eServer

test.beforeAll(async () => {
  server = await startServer()
})
test.afterAll(async () => {
  await server?.stop()
})

test('filter, page past 100, delete from the list, empty the inbox; counts on the inbox list', async ({ browser }) => {
  test.setTimeout(180_000)
  const context = await browser.newContext({ baseURL: server.baseUrl, viewport: { width: 1280, height: 900 } })
  const page = await context.newPage()
  const { orgPath, apiKey } = await setUp(page, server)
  const { address, path } = await createInbox(page, orgPath, 'lists')

  // 102 messages over one SMTP connection: two from another sender, one about a password.
  const client = await SmtpClient.connect(server.smtpPort, '127.0.0.1')
  await client.command('EHLO test.local')
  for (let i = 1; i <= 102; i++) {
    const from = i <= 2 ? 'Billing <billing@shop.example>' : 'App <app@example.com>'
    const subject = i === 50 ? 'Reset your password' : `Message ${i}`
    // A full preview (the list shows the first 200 characters of the text) to weigh the page as real mail would.
    const text = `${subject}. ${'Your order has shipped and will arrive soon; track it with the link below. '.repeat(4)}`
    const sent = await client.transaction(
      { from: 'app@example.com', to: [address] },
      simpleMessage(address, subject, { from, text }),
    )
    expect(sent.data?.code).toBe(250)
  }
  await client.command('QUIT').catch(() => {})

  // The page budget: a full page of the list stays under 50 KB.
  const full = await (await page.request.get(path)).body()
  console.log(`inbox page with 50 messages: ${full.length} bytes`)
  expect(full.length).toBeLessThan(50 * 1024)
  const hundred = await (await page.request.get(`${path}?size=100`)).body()
  console.log(`inbox page with 100 messages (100 a page): ${hundred.length} bytes`)
  expect(hundred.length).toBeLessThan(50 * 1024)

  // Paging: 50 a page, newest first, on past the newest 100.
  await page.goto(path)
  const rows = page.locator('#message-list tbody tr')
  await expect(rows).toHaveCount(50)
  await expect(rows.first()).toContainText('Message 102')
  await page.getByRole('link', { name: 'Older messages' }).click()
  await expect(rows).toHaveCount(50)
  await page.getByRole('link', { name: 'Older messages' }).click()
  await expect(rows).toHaveCount(2)
  await expect(rows.nth(1)).toContainText('Message 1')
  await page.getByRole('link', { name: 'Newest messages' }).click()
  await expect(rows).toHaveCount(50)

  // Filters: subject, sender domain, exact sender, date; a bad date is explained. The form is
  // folded under the search line until one of its fields is in use.
  await page.locator('summary', { hasText: 'Filter form' }).click()
  await page.getByLabel('Subject contains').fill('PASSWORD')
  await page.getByRole('button', { name: 'Filter' }).click()
  await expect(rows).toHaveCount(1)
  await expect(rows.first()).toContainText('Reset your password')
  await page.getByLabel('Subject contains').fill('')
  await page.getByLabel('From').fill('@shop.example')
  await page.getByRole('button', { name: 'Filter' }).click()
  await expect(rows).toHaveCount(2)
  await page.getByLabel('From').fill('billing@shop.example')
  await page.getByRole('button', { name: 'Filter' }).click()
  await expect(rows).toHaveCount(2)
  await page.getByLabel('Received since (UTC)').fill('2999-01-01')
  await page.getByRole('button', { name: 'Filter' }).click()
  await expect(page.locator('#no-matches')).toBeVisible()
  await page.getByLabel('Received since (UTC)').fill('yesterday')
  await page.getByRole('button', { name: 'Filter' }).click()
  await expect(page.locator('p.error')).toContainText('Received since')
  await page.getByRole('link', { name: 'Clear' }).click()
  await expect(rows).toHaveCount(50)

  // Delete one message from the list (Message 50 is on the first page).
  await page.locator('summary', { hasText: 'Filter form' }).click()
  await page.getByLabel('Subject contains').fill('password')
  await page.getByRole('button', { name: 'Filter' }).click()
  page.once('dialog', (dialog) => dialog.accept())
  await page.getByRole('button', { name: 'Delete Reset your password' }).click()
  await expect(page.locator('#no-matches')).toBeVisible()
  expect(new URL(page.url()).searchParams.get('subject')).toBe('password') // back on the same filtered view

  // The inbox list: count and last arrival; another inbox with none.
  await createInbox(page, orgPath, 'quiet')
  await page.goto(`${orgPath}/inboxes`)
  await expect(page.locator(`tr[data-inbox="${address}"] td.count`)).toHaveText('101')
  await expect(page.locator(`tr[data-inbox="${address}"] time`).first()).toHaveAttribute('title', /UTC$/)
  await expect(page.locator('tr[data-inbox="quiet@pigeonhole.test"] td.count')).toHaveText('0')

  // Search all inboxes of the organisation from the inbox list (its filter form folded under the search line).
  await page.locator('summary', { hasText: 'Filter form' }).click()
  await page.locator('#search-from').fill('@shop.example')
  await page.getByRole('button', { name: 'Search all inboxes' }).click()
  const found = page.locator('table tbody tr')
  await expect(found).toHaveCount(2)
  await expect(found.first()).toContainText(address)
  await found.first().getByRole('link').click()
  await expect(page.getByRole('heading', { name: 'Message 2', exact: true })).toBeVisible()

  // 100 more inboxes: the list pages on, a full page stays under 50 KB, and a row's Delete removes that inbox.
  for (let i = 0; i < 100; i++) {
    const made = await fetch(`${server.baseUrl}/v1/inboxes`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}` },
    })
    expect(made.status).toBe(201)
  }
  const inboxesPage = await (await page.request.get(`${orgPath}/inboxes`)).body()
  console.log(`inbox list, a full page of 50 inboxes: ${inboxesPage.length} bytes`)
  expect(inboxesPage.length).toBeLessThan(50 * 1024)
  await page.goto(`${orgPath}/inboxes`)
  await expect(page.locator('tr[data-inbox]')).toHaveCount(50)
  await page.getByRole('link', { name: 'Older inboxes' }).click()
  await expect(page.locator('tr[data-inbox]')).toHaveCount(50)
  await page.getByRole('link', { name: 'Older inboxes' }).click()
  await expect(page.locator('tr[data-inbox]')).toHaveCount(2)
  page.once('dialog', (dialog) => dialog.accept())
  await page.getByRole('button', { name: 'Delete quiet@pigeonhole.test' }).click()
  await expect(page.locator('tr[data-inbox="quiet@pigeonhole.test"]')).toHaveCount(0)

  // Empty the inbox: every message goes, the inbox stays.
  await page.goto(path)
  page.once('dialog', (dialog) => dialog.accept())
  await page.getByRole('button', { name: 'Empty this inbox' }).click()
  await expect(page.locator('#no-messages')).toBeVisible()
  await page.goto(`${orgPath}/inboxes`)
  await page.getByRole('link', { name: 'Older inboxes' }).click()
  await page.getByRole('link', { name: 'Older inboxes' }).click() // the oldest inbox is on the third page now
  await expect(page.locator(`tr[data-inbox="${address}"] td.count`)).toHaveText('0')
  await context.close()
})
