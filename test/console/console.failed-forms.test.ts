/**
 * A refused form is answered with a redirect to its page (post/redirect/get for failures),
 * the message carried in a sealed cookie that only this browser can open, and only on the
 * page its URL names; a Referer of another site, or none, gets the error page as before.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { ConsoleClient, PASSWORD, setUp, signedIn } from '../support/console-client.ts'
import { startTestServer, type TestServer } from '../support/harness.ts'

setDefaultTimeout(30_000)

let server: TestServer
let owner: ConsoleClient
let organizationId: string

beforeAll(async () => {
  server = await startTestServer()
  ;({ client: owner, organizationId } = await setUp(server, { email: 'op@example.com' }))
})
afterAll(() => server.stop())

const badKeyName = { name: 'x'.repeat(500) }

test('a refused form without its own handling goes back to the page it came from, with the message and its status', async () => {
  const keys = `/console/orgs/${organizationId}/keys`
  await owner.get(keys)
  const page = await owner.post(keys, badKeyName, { headers: { referer: `${server.url}${keys}?from=list` } })
  expect(page.refusedVia).toMatch(new RegExp(`^${keys}\\?from=list&failed=[A-Za-z0-9_-]{22}$`))
  expect(page.status).toBe(400)
  expect(page.html).toContain('id="form-error"')
  expect(page.html).toContain('A key name has at most')
  // Reloading the page shows it again (a GET), for as long as the cookie lives.
  expect((await owner.get(page.refusedVia!)).html).toContain('A key name has at most')
})

test('without a Referer, or with one of another site, the refusal is a page as before', async () => {
  const keys = `/console/orgs/${organizationId}/keys`
  for (const referer of [undefined, 'https://evil.test/console/orgs/x/keys', `${server.url}/v1/usage`]) {
    await owner.get(keys)
    const page = await owner.post(keys, badKeyName, { headers: referer ? { referer } : {} })
    expect(page.refusedVia).toBeUndefined()
    expect(page.status).toBe(400)
    expect(page.html).toContain('A key name has at most')
  }
})

test('another browser, or a page naming another id, shows nothing of it; the password is never kept', async () => {
  const stranger = ConsoleClient.for(server)
  await stranger.get('/console/sign-in')
  const refused = await stranger.post('/console/sign-in', {
    email: 'op@example.com',
    password: 'wrong password!!',
    next: '/console',
  })
  expect(refused.status).toBe(401)
  expect(refused.html).toContain('Wrong email or password.')
  // The same URL in a second browser: no message (its cookie is sealed to the first browser's form token).
  const other = ConsoleClient.for(server)
  const copied = await other.get(refused.refusedVia!)
  expect(copied.status).toBe(200)
  expect(copied.html).not.toContain('id="form-error"')
  // The first browser with the cookie but a different id in the URL: nothing either.
  const forged = refused.refusedVia!.replace(/failed=[^&]+/, `failed=${'A'.repeat(22)}`)
  expect((await stranger.get(forged)).html).not.toContain('id="form-error"')
  // The password never travels: only the email is kept.
  expect(refused.html).toContain('value="op@example.com"')
  const signedInAgain = await signedIn(server, 'op@example.com', PASSWORD)
  expect(signedInAgain.hasSession()).toBe(true)
})
