/**
 * The message page as someone opening a failed test's mail meets it: the email starts on the
 * first screen (desktop and phone) although the mail has a code, 33 links and attachments;
 * its frame is as tall as the email (no box scrolling inside the page) while the email still
 * runs no script; the width and remote-image toggles switch in place, keeping the position.
 */
import { expect, test, type Page } from '@playwright/test'
import { createInbox, OWNER, send, setUp } from './helpers.ts'
import { startServer, type E2eServer } from './server.ts'

let server: E2eServer

test.beforeAll(async () => {
  server = await startServer()
})
test.afterAll(async () => {
  await server?.stop()
})

/** A newsletter: a one-time code, 33 links, two attachments, and an HTML body about 3,000 px tall. */
function newsletter(to: string): string {
  const links = Array.from(
    { length: 33 },
    (_, i) => `<p><a href="https://shop.example/item/${i}">Item ${i}</a></p>`,
  ).join('')
  const html = [
    '<!doctype html><html><body style="margin:0">',
    '<h1 id="mail-top" style="margin:0;padding:16px">Spring sale</h1>',
    '<p>Your sign-in code is 731904.</p>',
    '<div style="height:2400px;background:linear-gradient(#fde, #def)">Tall content</div>',
    links,
    '<p id="mail-bottom">Unsubscribe</p>',
    // A script that would claim a height: it must not run (the frame would then be 12345 px).
    `<script>parent.postMessage({ pigeonholeFrameHeight: 12345 }, '*'); document.title = 'ran'</script>`,
    '</body></html>',
  ].join('\r\n')
  return [
    'From: Shop <news@shop.example>',
    `To: ${to}`,
    'Subject: Spring sale',
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="m"',
    '',
    '--m',
    'Content-Type: multipart/alternative; boundary="a"',
    '',
    '--a',
    'Content-Type: text/plain; charset=utf-8',
    '',
    'Your sign-in code is 731904.',
    '--a',
    'Content-Type: text/html; charset=utf-8',
    '',
    html,
    '--a--',
    '--m',
    'Content-Type: application/pdf; name="invoice.pdf"',
    'Content-Disposition: attachment; filename="invoice.pdf"',
    '',
    '%PDF-1.4 not really',
    '--m',
    'Content-Type: text/csv; name="items.csv"',
    'Content-Disposition: attachment; filename="items.csv"',
    '',
    'a,b',
    '--m--',
    '',
  ].join('\r\n')
}

const frameHeight = (page: Page) =>
  page.locator('iframe.message-html').evaluate((frame: HTMLIFrameElement) => frame.getBoundingClientRect().height)

test('the email starts on the first screen, its frame is as tall as the email, and the toggles switch in place', async ({
  browser,
}) => {
  const context = await browser.newContext({ baseURL: server.baseUrl, viewport: { width: 1280, height: 800 } })
  const page = await context.newPage()
  const { orgPath } = await setUp(page, server)
  const { address } = await createInbox(page, orgPath, 'newsletter')
  await send(server, address, newsletter(address))
  await page.reload()
  await page.getByRole('link', { name: 'Spring sale' }).click()
  const messageUrl = page.url()
  const frame = page.frameLocator('iframe.message-html')
  await expect(frame.locator('#mail-top')).toHaveText('Spring sale')

  // Desktop: the email's first line is on the first screen, with room to read it.
  const top = (await frame.locator('#mail-top').boundingBox())!
  expect(top.y + top.height).toBeLessThan(800 - 200)
  // The code is in the summary; links, headers and sources are collapsed under the email.
  await expect(page.getByLabel('Code 731904')).toBeVisible()
  await expect(page.locator('#message-extracts')).toHaveJSProperty('open', false)
  await expect(page.locator('#message-extracts summary')).toHaveText('Links (33)')
  await expect(page.locator('#view-headers')).toHaveJSProperty('open', false)
  await expect(page.locator('#raw-source')).toHaveJSProperty('open', false)
  // The attachment count opens the attachments.
  await page.getByRole('link', { name: '2 attachments' }).click()
  await expect(page.getByRole('link', { name: 'invoice.pdf' })).toBeVisible()

  // The frame grows to the email: the page scrolls, the frame's own document does not.
  await expect.poll(() => frameHeight(page)).toBeGreaterThan(2400 + 33 * 30)
  expect(await frameHeight(page)).toBeLessThan(12_000)
  const html = page.frames().find((f) => f.url().includes('/html'))!
  expect(await html.evaluate(() => document.scrollingElement!.scrollHeight - window.innerHeight)).toBeLessThanOrEqual(1)
  // ...without the email's script running, nor the frame sharing the console's origin.
  expect(await html.title()).toBe('')
  expect(await page.locator('iframe.message-html').getAttribute('sandbox')).not.toContain('allow-same-origin')
  expect(await html.evaluate(() => window.origin)).toBe('null')

  // Toggles: scrolled deep into the email, "Phone" keeps the document, the scroll and the bar in view.
  await page.evaluate(() => ((window as unknown as { marker: number }).marker = 1))
  await page.evaluate(() => window.scrollTo(0, 1600))
  await expect.poll(() => page.evaluate(() => window.scrollY)).toBe(1600)
  const phone = page.getByRole('link', { name: 'Phone (375 px)' })
  await expect(phone).toBeInViewport()
  await phone.click()
  await expect.poll(async () => (await page.locator('iframe.message-html').boundingBox())?.width).toBe(375)
  expect(await page.evaluate(() => (window as unknown as { marker?: number }).marker)).toBe(1)
  expect(await page.evaluate(() => window.scrollY)).toBe(1600)
  expect(new URL(page.url()).search).toBe('?width=phone')
  await expect(phone).toHaveAttribute('aria-current', 'true')
  // A narrower email is taller: the frame follows it.
  await expect.poll(() => frameHeight(page)).toBeGreaterThan(2400 + 33 * 30 + 50)

  await page.getByRole('link', { name: 'Load remote images' }).click()
  await expect(page.locator('iframe.message-html')).toHaveAttribute('src', /\/html\?images=remote$/)
  await expect(page.getByRole('link', { name: 'Block remote images' })).toBeVisible()
  expect(await page.evaluate(() => (window as unknown as { marker?: number }).marker)).toBe(1)
  // (The bar's note gets longer and may wrap: the browser's scroll anchoring keeps the email where it was.)
  expect(Math.abs((await page.evaluate(() => window.scrollY)) - 1600)).toBeLessThan(60)
  expect(new URL(page.url()).search).toBe('?images=remote&width=phone')
  // The choices survive a reload (the URL carries them).
  await page.reload()
  await expect(page.getByRole('link', { name: 'Phone (375 px)' })).toHaveAttribute('aria-current', 'true')
  await expect(page.locator('iframe.message-html')).toHaveAttribute('src', /\/html\?images=remote$/)

  // Phone: the email's first line is on the first screen at 390 x 844.
  await page.setViewportSize({ width: 390, height: 844 })
  await page.goto(messageUrl)
  const phoneTop = (await frame.locator('#mail-top').boundingBox())!
  expect(phoneTop.y + phoneTop.height).toBeLessThan(844 - 150)
  await context.close()
})

test('HTML-only mail shows its derived text, marked; encoded headers are decoded with the raw form one click away; pages are compressed', async ({
  browser,
}) => {
  const context = await browser.newContext({ baseURL: server.baseUrl })
  const page = await context.newPage()
  // The server was set up by the test above: sign in as its owner.
  await page.goto('/console/sign-in')
  await page.getByLabel('Email').fill(OWNER.email)
  await page.getByLabel('Password').fill(OWNER.password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await expect(page.getByRole('heading', { name: 'Acme QA' })).toBeVisible()
  const { address } = await createInbox(page, new URL(page.url()).pathname, 'html-only')
  const encoded = `=?utf-8?B?${Buffer.from('Grüße aus Zürich').toString('base64')}?=`
  const raw = [
    'From: App <app@example.com>',
    `To: ${address}`,
    `Subject: ${encoded}`,
    `X-Greeting: ${encoded}`,
    'MIME-Version: 1.0',
    'Content-Type: text/html; charset=utf-8',
    '',
    '<html><head><style>p { color: red }</style></head><body><h1>Welcome</h1><p>Your code is <b>4711</b>.</p><div>Second&nbsp;line &amp; more</div></body></html>',
    '',
  ].join('\r\n')
  await send(server, address, raw)
  await page.reload()
  await page.getByRole('link', { name: 'Grüße aus Zürich' }).click()

  // The text of the HTML, a line per block, marked as derived (not part of the message).
  await expect(page.locator('#view-text summary')).toContainText('derived from the HTML')
  await expect(page.locator('#message-text')).toHaveText('Welcome\nYour code is 4711.\nSecond line & more')
  await expect(page.locator('#message-text')).not.toContainText('color: red')

  // Headers: decoded, the raw encoded word one click away.
  await page.locator('#view-headers > summary').click()
  const row = page.locator('table.headers tr').filter({ has: page.getByRole('rowheader', { name: 'X-Greeting' }) })
  await expect(row.locator('td')).toContainText('Grüße aus Zürich')
  await expect(row.locator('code.raw-value')).toBeHidden()
  await row.getByText('raw', { exact: true }).click()
  await expect(row.locator('code.raw-value')).toBeVisible()
  await expect(row.locator('code.raw-value')).toHaveText(encoded)

  // The page and its assets arrive gzip-compressed.
  const [pageResponse, cssResponse] = await Promise.all([
    page.waitForResponse((r) => r.url() === page.url()),
    page.waitForResponse((r) => r.url().endsWith('/console.css')),
    page.reload(),
  ])
  expect(pageResponse.headers()['content-encoding']).toBe('gzip')
  expect(cssResponse.headers()['content-encoding']).toBe('gzip')
  expect(pageResponse.headers().vary).toContain('Accept-Encoding')
  await context.close()
})

test("a large message's page stays small: its text is loaded when its section is opened", async ({ browser }) => {
  const context = await browser.newContext({ baseURL: server.baseUrl })
  const page = await context.newPage()
  await page.goto('/console/sign-in')
  await page.getByLabel('Email').fill(OWNER.email)
  await page.getByLabel('Password').fill(OWNER.password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  const { address } = await createInbox(page, new URL(page.url()).pathname, 'large')
  const text = `${'A long log line of a failed build, repeated many times over.\r\n'.repeat(6000)}The very end.`
  const raw = [
    'From: CI <ci@example.com>',
    `To: ${address}`,
    'Subject: Build log',
    'Content-Type: text/plain; charset=utf-8',
    '',
    text,
    '',
  ].join('\r\n')
  await send(server, address, raw)
  await page.reload()
  await page.getByRole('link', { name: 'Build log' }).click()
  const html = await (await page.request.get(page.url())).text()
  expect(html.length).toBeLessThan(50 * 1024)
  await expect(page.locator('#view-text')).toHaveJSProperty('open', false)
  await page.locator('#view-text > summary').click()
  await expect(page.frameLocator('#view-text iframe').locator('pre')).toContainText('The very end.')
  await context.close()
})
