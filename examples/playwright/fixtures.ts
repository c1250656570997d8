/**
 * A Playwright fixture: every test that asks for `inbox` gets a fresh Pigeonhole inbox,
 * deleted after the test whatever its outcome. Copied with ../pigeonhole.ts and
 * ../playwright.config.ts, keeping their places (see that config).
 */
import { test as base } from '@playwright/test'
import { Pigeonhole, type Inbox, uniquePrefix } from '../pigeonhole.ts'

export const test = base.extend<{ pigeonhole: Pigeonhole; inbox: Inbox }>({
  // biome-ignore lint/correctness/noEmptyPattern: Playwright reads a fixture's dependencies from this pattern; this one has none
  pigeonhole: async ({}, use) => {
    // PIGEONHOLE_URL and PIGEONHOLE_KEY; an empty key stops here with a message saying so.
    await use(Pigeonhole.fromEnv())
  },
  inbox: async ({ pigeonhole }, use) => {
    // A prefix is the whole address and unique on the server: a fixed one fails the second test.
    const inbox = await pigeonhole.createInbox({ prefix: uniquePrefix('pw') })
    await use(inbox)
    await pigeonhole.deleteInbox(inbox)
  },
})
export { expect } from '@playwright/test'
