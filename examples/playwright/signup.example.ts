/** A Playwright sign-up test, copied as playwright/signup.spec.ts (../playwright.config.ts). */
import { extractCode, extractLink } from '../pigeonhole.ts'
import { expect, test } from './fixtures.ts'

test('sign up, receive the welcome mail, confirm the address', async ({ page, pigeonhole, inbox }) => {
  await page.goto('/')
  await page.getByLabel('Email').fill(inbox.address)
  await page.getByRole('button', { name: 'Sign up' }).click()
  await expect(page.getByRole('status')).toContainText(inbox.address)

  // The wait stays below this test's timeout (../playwright.config.ts: 30 s).
  const message = await pigeonhole.waitForMessage(inbox, { subject: 'Welcome', timeout: 20_000 })
  expect(extractCode(message)).toMatch(/^[0-9]{6}$/)

  await page.goto(extractLink(message, /\/confirm\?/))
  await expect(page.getByRole('heading', { name: 'Confirmed' })).toBeVisible()
})
