/**
 * The message list as a screen of work: a dozen rows and more at 1280×900 with one-line
 * buttons, where the page stands ("1–50 of 60") with Newer and Older, page sizes, an
 * attachment mark, read and unread (bold until opened; counted per inbox), bulk actions that
 * post, redirect and get (a reload repeats nothing), the one-line search with its operators
 * and a 400 that says where a line went wrong; an older page never claims to be live; axe
 * finds nothing serious on the list.
 */
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { expect, type Page, test } from '@playwright/test'
import { SmtpClient } from '../test/support/smtp.ts'
import { createInbox, send, setUp, simpleMessage } from './helpers.ts'
import { startServer, type E2eServer } from './server.ts'

let server: E2eServer

test.beforeAll(async () => {
  server = await startServer()
})
test.afterAll(async () => {
  await server?.stop()
})

/** A message with a PDF attached (an attachment proper, not an inline part). */
const withAttachment = (to: string, subject: string) =>
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
    'Your invoice is attached.',
    '--mix',
    'Content-Type: application/pdf; name="invoice.pdf"',
    'Content-Disposition: attachment; filename="invoice.pdf"',
    'Content-Transfer-Encoding: base64',
    '',
    Buffer.from('%PDF-1.4 a small pdf').toString('base64'),
    '--mix--',
    '',
  ].join('\r\n')

const axeViolations = async (page: Page) => {
  await page.evaluate(readFileSync(fileURLToPath(import.meta.resolve('axe-core/axe.min.js')), 'utf8'))
  return page.evaluate(async () => {
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
}

test('a dense list: rows per screen, totals, paging both ways, page sizes, marks, read state, bulk, search line', async ({
  browser,
}) => {
  test.setTimeout(180_000)
  const context = await browser.newContext({ baseURL: server.baseUrl, viewport: { width: 1280, height: 900 } })
  const page = await context.newPage()
  const { orgPath } = await setUp(page, server)
  const { address, path } = await createInbox(page, orgPath, 'dense')

  // 59 plain messages with full previews, then one with an attachment: 60 in all.
  const client = await SmtpClient.connect(server.smtpPort, '127.0.0.1')
  await client.command('EHLO test.local')
  for (let i = 1; i <= 59; i++) {
    const text = `Message ${i}. ${'Your order has shipped and will arrive soon; track it with the link below. '.repeat(4)}`
    const sent = await client.transaction(
      { from: 'app@example.com', to: [address] },
      simpleMessage(address, `Message ${i}`, { text }),
    )
    expect(sent.data?.code).toBe(250)
  }
  await client.command('QUIT').catch(() => {})
  await send(server, address, withAttachment(address, 'Your invoice'))

  await page.goto(path)
  const rows = page.locator('#message-list tbody tr')
  await expect(rows).toHaveCount(50)
  // At least 12 whole rows inside the first screen, and no Delete button on two lines.
  const inView = await rows.evaluateAll(
    (trs) => trs.filter((tr) => tr.getBoundingClientRect().bottom <= window.innerHeight).length,
  )
  console.log(`rows inside the first screen at 1280x900: ${inView}`)
  expect(inView).toBeGreaterThanOrEqual(12)
  const buttonHeights = await page
    .locator('#message-list tbody button')
    .evaluateAll((buttons) => buttons.map((b) => b.getBoundingClientRect().height))
  const lineHeight = await page
    .locator('#message-list tbody button')
    .first()
    .evaluate((b) => Number.parseFloat(getComputedStyle(b).lineHeight))
  expect(Math.max(...buttonHeights)).toBeLessThan(lineHeight * 2)

  // Where the page stands, and the way on.
  await expect(page.locator('#range')).toHaveText('1–50 of 60')
  await expect(page.locator('#newer-messages')).toHaveCount(0)
  await expect(page.locator('#live-status')).toContainText(/new mail appears here/i)
  await page.getByRole('link', { name: 'Older messages' }).click()
  await expect(page.locator('#range')).toHaveText('51–60 of 60')
  await expect(rows).toHaveCount(10)
  await expect(rows.last()).toContainText('Message 1')
  // An older page does not claim to be live, and mail arriving meanwhile does not change it.
  await expect(page.locator('#live-status')).not.toContainText('Live')
  await expect(page.locator('#live-status')).toContainText('new mail shows on the newest page')
  await expect(page.locator('[data-live-events]')).toHaveCount(0)
  await page.getByRole('link', { name: 'Newer messages' }).click()
  await expect(page.locator('#range')).toHaveText('1–50 of 60')
  await expect(rows.first()).toContainText('Your invoice')

  // Page sizes: 25 a page, paging keeps it; 100 shows all 60 and stays under the page budget.
  await page.getByRole('link', { name: '25 per page' }).click()
  await expect(page.locator('#range')).toHaveText('1–25 of 60')
  await page.getByRole('link', { name: 'Older messages' }).click()
  await expect(page.locator('#range')).toHaveText('26–50 of 60')
  await page.getByRole('link', { name: '100 per page' }).click()
  await expect(page.locator('#range')).toHaveText('1–60 of 60')
  const hundred = await (await page.request.get(`${path}?size=100`)).body()
  console.log(`inbox page with 60 messages at 100 a page: ${hundred.length} bytes`)
  expect(hundred.length).toBeLessThan(50 * 1024)
  expect((await page.request.get(`${path}?size=7`)).status()).toBe(400)

  // The attachment mark, on that row only.
  await page.goto(path)
  await expect(rows.first().getByRole('img', { name: 'has an attachment' })).toBeVisible()
  await expect(page.getByRole('img', { name: 'has an attachment' })).toHaveCount(1)

  // Unread until opened: bold, counted on the inbox and the inbox list.
  await expect(page.locator('#inbox-unread')).toHaveText('60 unread')
  await expect(rows.first()).toHaveClass('u')
  const firstLink = rows.first().getByRole('link')
  await expect(firstLink).toHaveCSS('font-weight', '700')
  await rows.first().getByRole('link').click()
  await expect(page.getByRole('heading', { name: 'Your invoice', exact: true })).toBeVisible()
  await page.goto(path)
  await expect(page.locator('#inbox-unread')).toHaveText('59 unread')
  await expect(firstLink).toHaveCSS('font-weight', '400')
  await expect(rows.first()).not.toHaveClass('u')
  await page.goto(`${orgPath}/inboxes`)
  await expect(page.locator(`tr[data-inbox="${address}"] td.unread`)).toHaveText('59')

  // Bulk: tick two, mark them read (no question asked), then delete two others (asked first).
  await page.goto(path)
  await page.getByRole('checkbox', { name: 'Message 59', exact: true }).check()
  await page.getByRole('checkbox', { name: 'Message 58', exact: true }).check()
  let asked = 0
  page.on('dialog', (dialog) => {
    asked++
    return dialog.accept()
  })
  await page.getByRole('button', { name: 'Mark read' }).click()
  await expect(page.locator('#inbox-unread')).toHaveText('57 unread')
  expect(asked).toBe(0)
  await page.getByRole('checkbox', { name: 'Message 57', exact: true }).check()
  await page.getByRole('checkbox', { name: 'Message 56', exact: true }).check()
  await page.getByRole('button', { name: 'Delete selected' }).click()
  await expect(page.locator('#range')).toHaveText('1–50 of 58')
  expect(asked).toBe(1)
  await expect(page.getByRole('link', { name: 'Message 57', exact: true })).toHaveCount(0)
  // Post, redirect, get: a reload reads the list again and posts nothing.
  const reposted: string[] = []
  page.on('request', (request) => {
    if (request.method() === 'POST') reposted.push(request.url())
  })
  await page.reload()
  await expect(page.locator('#range')).toHaveText('1–50 of 58')
  expect(reposted).toEqual([])
  // "All on this page" then Mark unread: every row is unread again.
  await page.getByLabel('All on this page').check()
  await page.getByRole('button', { name: 'Mark unread' }).click()
  await expect(page.locator('#inbox-unread')).toHaveText('58 unread')

  // The search line: operators, negation, the URL carries it, and a malformed line is a 400 that says where.
  const search = page.getByRole('searchbox', { name: 'Search this inbox' })
  await search.fill('from:shop.example has:attachment')
  await search.press('Enter')
  await expect(rows).toHaveCount(1)
  await expect(rows.first()).toContainText('Your invoice')
  expect(new URL(page.url()).searchParams.get('q')).toBe('from:shop.example has:attachment')
  await search.fill('-has:attachment "message 5"')
  await search.press('Enter')
  await expect(page.locator('#range')).toHaveText('1–9 of 9') // 5, 50–55, 58, 59 (56 and 57 were deleted)
  await search.fill('smaller:1k is:unread -subject:"message 1"')
  await search.press('Enter')
  await expect(page.locator('#range')).toHaveText('1–47 of 47')
  const bad = await page.request.get(`${path}?q=${encodeURIComponent('subject:"open quote')}`)
  expect(bad.status()).toBe(400)
  await search.fill('from:x colour:red')
  await search.press('Enter')
  await expect(page.locator('#search-error')).toContainText('at character 8')
  await expect(page.locator('#search-error')).toContainText('"colour:" is not an operator')

  // axe on the list (its bulk controls, pager and search line), then on an older page.
  await page.goto(path)
  expect(await axeViolations(page)).toEqual([])
  await page.getByRole('link', { name: 'Older messages' }).click()
  expect(await axeViolations(page)).toEqual([])
  await context.close()
})
