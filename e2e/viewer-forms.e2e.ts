/**
 * Reload and Back repeat no action: the first-run key page is a GET (post/redirect/get),
 * a refused form (a wrong password, a taken address) redirects to its page with the
 * message carried over, and signing in from a link keeps the link's query.
 */
import { expect, test, type Page } from '@playwright/test'
import { createInbox, OWNER, setUp } from './helpers.ts'
import { startServer, type E2eServer } from './server.ts'

let server: E2eServer

test.beforeAll(async () => {
  server = await startServer()
})
test.afterAll(async () => {
  await server?.stop()
})

/** The methods of the documents the page loads from now on (a re-sent form would be a POST). */
function documentMethods(page: Page): string[] {
  const methods: string[] = []
  page.on('request', (request) => {
    if (request.resourceType() === 'document') methods.push(request.method())
  })
  return methods
}

test('first-run key, refused forms and sign-in links survive a reload without repeating anything', async ({
  browser,
}) => {
  const context = await browser.newContext({ baseURL: server.baseUrl })
  const page = await context.newPage()

  // Setup with a password past the server's limit (the browser checks only the minimum): refused,
  // and the form comes back from a GET with what was typed (not the password).
  await page.goto(server.setupUrl)
  await page.getByLabel('Your email').fill(OWNER.email)
  await page.getByLabel('Password').fill('x'.repeat(300))
  await page.getByLabel('Organisation name').fill('Acme QA')
  await page.getByRole('radio', { name: /Local testing/ }).check()
  await page.getByRole('button', { name: 'Create account, organisation and key' }).click()
  await expect(page.locator('#form-error')).toHaveText(/^The password must have \d+ to 256 characters\.$/)
  expect(new URL(page.url()).searchParams.has('failed')).toBe(true)
  await expect(page.getByLabel('Your email')).toHaveValue(OWNER.email)
  await expect(page.getByLabel('Organisation name')).toHaveValue('Acme QA')
  await expect(page.getByLabel('Password')).toHaveValue('')

  // Setup done: the key is on a GET page; reloading it shows the same key, not a 403.
  await page.getByLabel('Password').fill(OWNER.password)
  await page.getByRole('radio', { name: /Local testing/ }).check()
  await page.getByRole('button', { name: 'Create account, organisation and key' }).click()
  const key = await page.getByLabel('Your API key').inputValue()
  expect(key).toMatch(/^ph_live_/)
  expect(new URL(page.url()).pathname).toMatch(/^\/console\/orgs\/org_[0-9a-f]{32}\/welcome$/)
  const methods = documentMethods(page)
  await page.reload()
  await expect(page.getByLabel('Your API key')).toHaveValue(key)
  expect(methods).toEqual(['GET'])
  await page.getByRole('link', { name: 'Open the organisation' }).click()
  const orgPath = new URL(page.url()).pathname

  // A taken address: refused on the inboxes page; reloading shows the message again and posts nothing.
  await createInbox(page, orgPath, 'taken')
  await page.goto(`${orgPath}/inboxes`)
  await page.getByLabel('Address (optional)').fill('taken')
  await page.getByRole('button', { name: 'Create inbox' }).click()
  await expect(page.locator('#form-error')).toContainText(/taken|in use|unavailable/i)
  await expect(page.getByLabel('Address (optional)')).toHaveValue('taken')
  methods.length = 0
  await page.reload()
  await expect(page.locator('#form-error')).toContainText(/taken|in use|unavailable/i)
  expect(methods).toEqual(['GET'])

  // A link with filters, opened signed out: sign-in keeps its query.
  const inbox = await createInbox(page, orgPath, 'filtered')
  const link = `${inbox.path}?subject=receipt&from=shop%40example.com`
  await page.getByRole('button', { name: 'Sign out' }).click()
  await page.goto(link)
  await expect(page.getByRole('heading', { name: 'Sign in' })).toBeVisible()
  // A wrong password: back on the form from a GET, the email kept; reloading is not another guess.
  await page.getByLabel('Email').fill(OWNER.email)
  await page.getByLabel('Password').fill('not the password')
  await page.getByRole('button', { name: 'Sign in' }).click()
  await expect(page.getByText('Wrong email or password.')).toBeVisible()
  await expect(page.getByLabel('Email')).toHaveValue(OWNER.email)
  methods.length = 0
  await page.reload()
  await expect(page.getByText('Wrong email or password.')).toBeVisible()
  expect(methods).toEqual(['GET'])
  await page.getByLabel('Password').fill(OWNER.password)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await expect(page.getByRole('heading', { name: 'filtered@pigeonhole.test' })).toBeVisible()
  expect(new URL(page.url()).pathname + new URL(page.url()).search).toBe(link)
  await expect(page.getByLabel('Subject')).toHaveValue('receipt')
  await context.close()
})

test('two servers on localhost keep their own sessions in one browser (the cookie names carry the port)', async ({
  browser,
}) => {
  const other = await startServer()
  try {
    const context = await browser.newContext()
    const page = await context.newPage()
    // The first server was set up above; the second is set up in the same browser.
    await page.goto(`${server.baseUrl}/console/sign-in`)
    await page.getByLabel('Email').fill(OWNER.email)
    await page.getByLabel('Password').fill(OWNER.password)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await expect(page.getByRole('heading', { name: 'Acme QA' })).toBeVisible()
    const first = page.url()
    await setUp(page, other)
    const second = page.url()
    // Each still signed in: neither cookie overwrote the other.
    await page.goto(first)
    await expect(page.getByRole('heading', { name: 'Acme QA' })).toBeVisible()
    await page.goto(second)
    await expect(page.getByRole('heading', { name: 'Acme QA' })).toBeVisible()
    const names = (await context.cookies()).map((c) => c.name).filter((name) => name.startsWith('ph_session'))
    expect(names.sort()).toEqual(
      [`ph_session_${new URL(server.baseUrl).port}`, `ph_session_${new URL(other.baseUrl).port}`].sort(),
    )
    await context.close()
  } finally {
    await other.stop()
  }
})
