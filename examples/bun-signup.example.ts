/**
 * A sign-up test with `bun test`. Copy it into a folder of your suite as signup.test.ts,
 * with the client beside it (README.md, "In your own project"):
 *
 *   cp path/to/pigeonhole/examples/pigeonhole.ts tests/
 *   cp path/to/pigeonhole/examples/bun-signup.example.ts tests/signup.test.ts
 *   PIGEONHOLE_KEY=ph_live_... APP_URL=http://127.0.0.1:4000 bun test
 *
 * For Vitest, change the import line to 'vitest'; nothing else is Bun-specific.
 */
import { afterEach, beforeEach, expect, test } from 'bun:test'
import { extractCode, extractLink, Pigeonhole, type Inbox, uniquePrefix } from './pigeonhole.ts'

const appUrl = process.env.APP_URL || 'http://127.0.0.1:4000'
const pigeonhole = Pigeonhole.fromEnv() // PIGEONHOLE_URL, PIGEONHOLE_KEY

let inbox: Inbox
beforeEach(async () => {
  // A prefix is the whole address and unique on the server: a fixed one fails the second test.
  inbox = await pigeonhole.createInbox({ prefix: uniquePrefix('signup') })
})
afterEach(async () => {
  await pigeonhole.deleteInbox(inbox)
})

const signUp = (email: string) => fetch(`${appUrl}/signup`, { method: 'POST', body: new URLSearchParams({ email }) })

test('sign-up sends a welcome mail whose link confirms the address', async () => {
  expect((await signUp(inbox.address)).status).toBe(200)

  // The wait (4 s) stays below this test's timeout (10 s, the last argument of test()).
  const message = await pigeonhole.waitForMessage(inbox, { subject: 'Welcome', timeout: 4_000 })
  expect(message.from.address).toBe('hello@demo-app.example')
  expect(extractCode(message)).toMatch(/^[0-9]{6}$/)

  const confirmed = await fetch(extractLink(message, /\/confirm\?/))
  expect(await confirmed.text()).toContain(`${inbox.address} is confirmed`)
}, 10_000)

test('signing up twice: wait for the next message, not the first one again', async () => {
  await signUp(inbox.address)
  const first = await pigeonhole.waitForMessage(inbox, { subject: 'Welcome', timeout: 4_000 })
  await signUp(inbox.address)
  const second = await pigeonhole.waitForNextMessage(inbox, first, { subject: 'Welcome', timeout: 4_000 })
  expect(second.id).not.toBe(first.id)
  expect(extractCode(second)).not.toBe('')
}, 10_000)
