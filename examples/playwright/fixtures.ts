/**
 * A Playwright fixture: every test that asks for `inbox` gets a fresh Pigeonhole inbox,
 * deleted after the test whatever its outcome. Copy with ../pigeonhole.ts.
 */
import { test as base } from '@playwright/test'
import { Pigeonhole, type Inbox } from '../pigeonhole.ts'

export const test = base.extend<{ pigeonhole: Pigeonhole; inbox: Inbox }>({
  // biome-ignore lint/correctness/noEmptyPattern: Playwright reads a fixture's dependencies from this pattern; this one has none
  pigeonhole: async ({}, use) => {
    await use(new Pigeonhole({ url: process.env.PIGEONHOLE_URL ?? 'http://localhost:3000', key: process.env.PIGEONHOLE_KEY ?? '' }))
  },
  inbox: async ({ pigeonhole }, use) => {
    const inbox = await pigeonhole.createInbox({ prefix: `pw-${Date.now().toString(36)}` })
    await use(inbox)
    await pigeonhole.deleteInbox(inbox)
  },
})
export { expect } from '@playwright/test'
