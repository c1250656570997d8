/** Steps several browser tests share: first-run setup, an inbox, a message sent over SMTP. */
import { expect, type Page } from '@playwright/test'
import { sendMail } from '../test/support/smtp.ts'
import type { E2eServer } from './server.ts'

export const OWNER = { email: 'owner@example.com', password: 'owner password 12' }

/** Setup from the printed link (local-testing limits); leaves the page on the organisation's overview. */
export async function setUp(page: Page, server: E2eServer): Promise<{ apiKey: string; orgPath: string }> {
  await page.goto(server.setupUrl)
  await page.getByLabel('Your email').fill(OWNER.email)
  await page.getByLabel('Password').fill(OWNER.password)
  await page.getByLabel('Organisation name').fill('Acme QA')
  await page.getByRole('radio', { name: /Local testing/ }).check()
  await page.getByRole('button', { name: 'Create account, organisation and key' }).click()
  const apiKey = await page.getByLabel('Your API key').inputValue()
  await page.getByRole('link', { name: 'Open the organisation' }).click()
  await expect(page.getByRole('heading', { name: 'Acme QA' })).toBeVisible()
  return { apiKey, orgPath: new URL(page.url()).pathname }
}

/** Creates an inbox from the console; leaves the page on it and returns its path. */
export async function createInbox(
  page: Page,
  orgPath: string,
  prefix: string,
): Promise<{ address: string; path: string }> {
  await page.goto(`${orgPath}/inboxes`)
  await page.getByLabel('Address (optional)').fill(prefix)
  await page.getByRole('button', { name: 'Create inbox' }).click()
  const address = `${prefix}@pigeonhole.test` // the default RECEIVING_DOMAIN
  await expect(page.getByRole('heading', { name: address })).toBeVisible()
  return { address, path: new URL(page.url()).pathname }
}

/** A simple message (HTML and text parts) as the SMTP client sends it. */
export function simpleMessage(
  to: string,
  subject: string,
  opts: { html?: string; text?: string; from?: string } = {},
): string {
  const lines = [
    `From: ${opts.from ?? 'App <app@example.com>'}`,
    `To: ${to}`,
    `Subject: ${subject}`,
    'MIME-Version: 1.0',
    'Content-Type: multipart/alternative; boundary="alt"',
    '',
    '--alt',
    'Content-Type: text/plain; charset=utf-8',
    '',
    opts.text ?? `${subject}.`,
  ]
  if (opts.html !== undefined) lines.push('--alt', 'Content-Type: text/html; charset=utf-8', '', opts.html)
  lines.push('--alt--', '')
  return lines.join('\r\n')
}

export async function send(server: E2eServer, to: string, raw: string): Promise<void> {
  const sent = await sendMail(server.smtpPort, { from: 'app@example.com', to: [to] }, raw)
  expect(sent.data?.code).toBe(250)
}
