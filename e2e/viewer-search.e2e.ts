/**
 * The viewer's search filters as a developer uses them: text (subject or body), has
 * attachment and received until in one inbox; recipient and a date range to the second
 * across inboxes; the filters kept in the URL, so a copied link shows the same search;
 * hostile values explained on the page.
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

/** A message with a text body and a PDF attached. */
const withAttachment = (to: string, subject: string, text: string) =>
  [
    'From: Billing <billing@shop.example>',
    `To: ${to}`,
    `Subject: ${subject}`,
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="mix"',
    '',
    '--mix',
    'Content-Type: text/plain; charset=utf-8',
    '',
    text,
    '--mix',
    'Content-Type: application/pdf',
    'Content-Disposition: attachment; filename="invoice.pdf"',
    'Content-Transfer-Encoding: base64',
    '',
    'JVBERi0xLjQK',
    '--mix--',
    '',
  ].join('\r\n')

test('text, attachment and date range in an inbox; recipient and range across inboxes; links keep the search', async ({
  browser,
}) => {
  test.setTimeout(120_000)
  const context = await browser.newContext({ baseURL: server.baseUrl, viewport: { width: 1280, height: 900 } })
  const page = await context.newPage()
  const { orgPath } = await setUp(page, server)
  const other = await createInbox(page, orgPath, 'receipts')
  const { address, path } = await createInbox(page, orgPath, 'search')

  await send(
    server,
    address,
    simpleMessage(address, 'Welcome aboard', { text: 'Your verification code is 482913.\r\nWelcome!' }),
  )
  await send(server, address, withAttachment(address, 'Invoice 7', 'Thanks for your order of 50% off.'))
  await send(server, address, simpleMessage(address, 'Shipping update', { text: 'Your parcel is on its way.' }))
  await send(server, other.address, withAttachment(other.address, 'Receipt 12', 'Paid in full.'))

  await page.goto(path)
  const rows = page.locator('#message-list tbody tr')
  await expect(rows).toHaveCount(3)

  // Text: the body, any case, across a line break; a % is a percent sign, not a wildcard.
  await page.locator('summary', { hasText: 'Filter form' }).click() // folded under the search line until in use
  await page.getByLabel('Text contains').fill('CODE IS 482913. welcome')
  await page.getByRole('button', { name: 'Filter' }).click()
  await expect(rows).toHaveCount(1)
  await expect(rows.first()).toContainText('Welcome aboard')
  await expect(page.locator('#text-bounds')).toContainText('newest 1,000 messages')
  await page.getByLabel('Text contains').fill('50%')
  await page.getByRole('button', { name: 'Filter' }).click()
  await expect(rows).toHaveCount(1)
  await expect(rows.first()).toContainText('Invoice 7')

  // Has attachment, combined with text (AND).
  await page.getByLabel('Text contains').fill('your')
  await page.getByLabel('Has attachment').check()
  await page.getByRole('button', { name: 'Filter' }).click()
  await expect(rows).toHaveCount(1)
  await expect(rows.first()).toContainText('Invoice 7')
  expect(new URL(page.url()).searchParams.get('attachment')).toBe('yes')

  // The URL is the search: opened afresh it shows the same list and the same form.
  const link = page.url()
  const second = await context.newPage()
  await second.goto(link)
  await expect(second.locator('#message-list tbody tr')).toHaveCount(1)
  await expect(second.getByLabel('Has attachment')).toBeChecked()
  await expect(second.getByLabel('Text contains')).toHaveValue('your')
  await second.close()

  // Until: to the second of the newest message, inclusive; before everything, nothing.
  await page.getByRole('link', { name: 'Clear' }).click()
  const newest = (await rows.first().locator('time').getAttribute('datetime'))!
  const second0 = newest.slice(0, 19).replace('T', ' ')
  await page.locator('summary', { hasText: 'Filter form' }).click() // folded under the search line until in use
  await page.getByLabel('Received until (UTC)').fill(second0)
  await page.getByRole('button', { name: 'Filter' }).click()
  await expect(rows).toHaveCount(3)
  await page.getByLabel('Received until (UTC)').fill('2000-01-01')
  await page.getByRole('button', { name: 'Filter' }).click()
  await expect(page.locator('#no-matches')).toBeVisible()

  // Hostile values: explained on the page, the list not shown.
  await page.getByLabel('Received since (UTC)').fill('2026-01-02')
  await page.getByLabel('Received until (UTC)').fill('2026-01-01')
  await page.getByRole('button', { name: 'Filter' }).click()
  await expect(page.locator('p.error')).toHaveText('Received until is before received since: nothing can match.')
  await page.goto(`${path}?text=${encodeURIComponent('a\u0000b')}`)
  await expect(page.locator('p.error')).toHaveText('Text contains: control characters cannot be searched for.')
  await page.goto(`${path}?text=${'x'.repeat(101)}`)
  await expect(page.locator('p.error')).toHaveText('Text contains: at most 100 characters.')

  // Across inboxes: recipient (part of the address), attachment, and the range to the second.
  await page.goto(`${orgPath}/inboxes`)
  await page.locator('summary', { hasText: 'Filter form' }).click() // folded under the search line until in use
  await page.getByLabel('To contains').fill('RECEIPTS@')
  await page.getByRole('button', { name: 'Search all inboxes' }).click()
  const found = page.locator('table tbody tr')
  await expect(found).toHaveCount(1)
  await expect(found.first()).toContainText('Receipt 12')
  await page.getByLabel('To contains').fill('')
  await page.getByLabel('Has attachment').check()
  await page.getByLabel('Received since (UTC)').fill('2000-01-01 00:00:00')
  await page.getByLabel('Received until (UTC)').fill(second0)
  await page.getByRole('button', { name: 'Search all inboxes' }).click()
  await expect(found).toHaveCount(2)
  await expect(page.locator('#search-bounds')).toContainText(
    'newest 5,000 messages in every active inbox; with text or a subject, its newest 1,000',
  )
  await context.close()
})
