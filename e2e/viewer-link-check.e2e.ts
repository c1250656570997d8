/**
 * The link check as a person uses it against a local application: allowed by
 * CONSOLE_LINK_CHECK_ALLOW, every link and image checked with each redirect shown, the
 * result on a GET page of its own (an address to share); reload, Back and Forward show it
 * again without sending one more request; axe finds nothing serious on it.
 */
import { createServer, type Server } from 'node:http'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { expect, test } from '@playwright/test'
import { createInbox, send, setUp, simpleMessage } from './helpers.ts'
import { startServer, type E2eServer } from './server.ts'

let server: E2eServer
let app: Server
let appPort: number
const hits: string[] = []

test.beforeAll(async () => {
  app = createServer((request, response) => {
    hits.push(`${request.method} ${request.url}`)
    if (request.url === '/confirm') response.writeHead(302, { location: '/welcome' }).end()
    else if (request.url === '/gone') response.writeHead(404).end()
    else response.writeHead(200).end('ok')
  })
  await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve))
  appPort = (app.address() as { port: number }).port
  server = await startServer({ CONSOLE_LINK_CHECK_ALLOW: `localhost:${appPort}` })
})
test.afterAll(async () => {
  await server?.stop()
  app?.close()
})

test('check links against localhost: a GET result with every hop, never re-run by reload or Back', async ({
  browser,
}) => {
  test.setTimeout(120_000)
  const context = await browser.newContext({ baseURL: server.baseUrl, viewport: { width: 1280, height: 900 } })
  const page = await context.newPage()
  const { orgPath } = await setUp(page, server)
  const { address, path } = await createInbox(page, orgPath, 'links')
  const base = `http://localhost:${appPort}`
  const html = `<p><a href="${base}/confirm">Confirm</a> <a href="${base}/gone">Old link</a></p><img src="${base}/logo.png" alt="Logo">`
  await send(
    server,
    address,
    simpleMessage(address, 'Confirm your account', { html, text: `Confirm: ${base}/confirm\r\nHelp: ${base}/help` }),
  )
  await page.goto(path)
  await page.getByRole('link', { name: 'Confirm your account' }).click()
  const messageUrl = page.url()

  // The links are a collapsed section under the email: open it, as a person would.
  await page.locator('#message-extracts summary').click()
  await page.getByRole('button', { name: 'Check links' }).click()
  await expect(page).toHaveURL(/\/link-checks\/check_[0-9a-f]{32}$/)
  const resultUrl = page.url()
  const rows = page.locator('#link-check tbody tr')
  await expect(rows).toHaveCount(4) // confirm, gone, help (text part only), the image
  await expect(rows.filter({ hasText: '/confirm' })).toContainText('302 →')
  await expect(rows.filter({ hasText: '/confirm' }).locator('.link-status')).toHaveText('200 OK')
  await expect(rows.filter({ hasText: '/gone' }).locator('.link-status')).toHaveText('404 Not Found')
  await expect(rows.filter({ hasText: '/help' }).locator('.link-status')).toHaveText('200 OK')
  await expect(rows.filter({ hasText: '/logo.png' })).toContainText('Image')
  const sent = hits.length
  expect(sent).toBe(5) // HEAD /confirm, /welcome, /gone, /help, /logo.png

  // Reload, Back, Forward, and the address opened in another tab: the kept result, no request.
  await page.reload()
  await expect(rows).toHaveCount(4)
  await page.goBack()
  await expect(page).toHaveURL(messageUrl)
  await page.goForward()
  await expect(page).toHaveURL(resultUrl)
  await expect(rows).toHaveCount(4)
  const shared = await context.newPage()
  await shared.goto(resultUrl)
  await expect(shared.locator('#link-check tbody tr')).toHaveCount(4)
  await shared.close()
  expect(hits.length).toBe(sent)

  // axe on the result page.
  await page.evaluate(readFileSync(fileURLToPath(import.meta.resolve('axe-core/axe.min.js')), 'utf8'))
  const violations = await page.evaluate(async () => {
    const result = await (
      window as unknown as { axe: { run(o: object): Promise<{ violations: { id: string; impact: string }[] }> } }
    ).axe.run({ resultTypes: ['violations'] })
    return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id)
  })
  expect(violations).toEqual([])
  // Check again is a new check with a new address.
  await page.getByRole('button', { name: 'Check again' }).click()
  await expect(page).toHaveURL(/\/link-checks\/check_[0-9a-f]{32}$/)
  expect(page.url()).not.toBe(resultUrl)
  await context.close()
})
