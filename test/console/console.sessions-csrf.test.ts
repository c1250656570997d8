/** Sign-in, the session cookie, sign-out, throttling, and CSRF on every state change. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ManualClock } from '../../src/clock.ts'
import {
  FAILURES_PER_ACCOUNT_AND_ADDRESS,
  FAILURES_PER_ADDRESS,
  SIGN_IN_WINDOW_MS,
} from '../../src/core/users/sign-in-throttle.ts'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { ConsoleClient, PASSWORD, setUp, signedIn } from '../support/console-client.ts'

const clock = new ManualClock('2026-03-10T10:00:00.000Z')
let server: TestServer
let organizationId: string
const OPERATOR = 'operator@example.com'

beforeAll(async () => {
  server = await startTestServer({ clock })
  ;({ organizationId } = await setUp(server, { email: OPERATOR }))
})
afterAll(() => server.stop())

describe('sign-in', () => {
  test('a right password gives an HttpOnly, SameSite=Lax, Path=/ cookie (no Secure on http) and the console', async () => {
    const client = ConsoleClient.for(server)
    await client.get('/console/sign-in')
    const page = await client.post('/console/sign-in', {
      email: 'OPERATOR@example.com ',
      password: PASSWORD,
      next: `/console/orgs/${organizationId}`,
    })
    expect(page.status).toBe(303)
    expect(page.location).toBe(`/console/orgs/${organizationId}`)
    const cookie = page.headers.getSetCookie().find((line) => line.startsWith(`${client.sessionCookieName}=`))!
    expect(cookie).toContain('HttpOnly')
    expect(cookie).toContain('SameSite=Lax')
    expect(cookie).toContain('Path=/')
    expect(cookie).not.toContain('Secure')
    expect((await client.get(`/console/orgs/${organizationId}`)).status).toBe(200)
  })

  test('only the SHA-256 of the session token is stored', async () => {
    const client = await signedIn(server, OPERATOR)
    const token = client.cookies.get(client.sessionCookieName)!
    const rows = await server.query('select token_sha256 from sessions')
    expect(rows.some((row) => row.token_sha256 === new Bun.CryptoHasher('sha256').update(token).digest('hex'))).toBe(
      true,
    )
    expect(rows.some((row) => row.token_sha256 === token)).toBe(false)
  })

  test('a wrong password or an unknown account answers 401 with the same message', async () => {
    const client = ConsoleClient.for(server)
    await client.get('/console/sign-in')
    const wrong = await client.post('/console/sign-in', { email: OPERATOR, password: 'wrong password!' })
    const unknown = await client.post('/console/sign-in', { email: 'nobody@example.com', password: 'wrong password!' })
    expect([wrong.status, unknown.status]).toEqual([401, 401])
    expect(wrong.html).toContain('Wrong email or password.')
    expect(unknown.html).toContain('Wrong email or password.')
    expect(client.hasSession()).toBe(false)
  })

  test('a page without a session redirects to sign-in with the path to come back to', async () => {
    const page = await ConsoleClient.for(server).get(`/console/orgs/${organizationId}`)
    expect(page.status).toBe(303)
    expect(page.location).toBe(`/console/sign-in?next=${encodeURIComponent(`/console/orgs/${organizationId}`)}`)
  })

  test('next is followed only inside the console (no open redirect)', async () => {
    for (const next of [
      'https://evil.test/',
      '//evil.test',
      '/console/../v1/usage',
      'javascript:alert(1)',
      '/\\evil.test/console',
      '/console\n//evil.test',
      'https://evil.test/console?x=1',
    ]) {
      const client = ConsoleClient.for(server)
      await client.get('/console/sign-in')
      const page = await client.post('/console/sign-in', { email: OPERATOR, password: PASSWORD, next })
      expect(page.location).toBe('/console')
    }
  })
})

describe('next keeps the query', () => {
  test("a link's query survives signing in, re-encoded, without a refused form's marker", async () => {
    const filtered = `/console/orgs/${organizationId}/search?subject=Gr%C3%BC%C3%9Fe&from=a%40b.test`
    const page = await ConsoleClient.for(server).get(filtered)
    expect(page.location).toBe(`/console/sign-in?next=${encodeURIComponent(filtered)}`)
    const client = ConsoleClient.for(server)
    await client.get('/console/sign-in')
    const signed = await client.post('/console/sign-in', { email: OPERATOR, password: PASSWORD, next: filtered })
    expect(signed.location).toBe(filtered)
    const again = ConsoleClient.for(server)
    await again.get('/console/sign-in')
    const marked = await again.post('/console/sign-in', {
      email: OPERATOR,
      password: PASSWORD,
      next: `/console/orgs/${organizationId}?failed=abc&x=1`,
    })
    expect(marked.location).toBe(`/console/orgs/${organizationId}?x=1`)
  })
})

describe('sessions', () => {
  test('sign-out ends the session in the database: the old cookie no longer works', async () => {
    const client = await signedIn(server, OPERATOR)
    const token = client.cookies.get(client.sessionCookieName)!
    expect((await client.post('/console/sign-out')).status).toBe(303)
    const stale = new ConsoleClient(server.url)
    stale.cookies.set(stale.sessionCookieName, token)
    expect((await stale.get('/console')).status).toBe(303)
  })

  test('a session expires after CONSOLE_SESSION_DAYS unused, and slides forward while used', async () => {
    const client = await signedIn(server, OPERATOR)
    clock.advance(10 * 86_400_000) // past half of 14 days: this use extends it to 14 days from now
    const renewed = await client.get('/console')
    expect(
      renewed.headers
        .getSetCookie()
        .some((line) => line.startsWith(`${client.sessionCookieName}=`) && line.includes(`Max-Age=${14 * 86_400}`)),
    ).toBe(true)
    clock.advance(13 * 86_400_000)
    expect((await client.get(`/console/orgs/${organizationId}`)).status).toBe(200)
    clock.advance(14 * 86_400_000 + 1)
    expect((await client.get(`/console/orgs/${organizationId}`)).status).toBe(303)
  })
})

describe('throttling', () => {
  test(`after ${FAILURES_PER_ACCOUNT_AND_ADDRESS} failures an account is refused (429) from that address, until the window ends`, async () => {
    const client = ConsoleClient.for(server)
    await client.get('/console/sign-in')
    const email = 'throttled@example.com'
    for (let i = 0; i < FAILURES_PER_ACCOUNT_AND_ADDRESS; i++)
      await client.post('/console/sign-in', { email, password: 'guess number ' + i })
    const refused = await client.post('/console/sign-in', { email: OPERATOR, password: 'still a guess' })
    expect(refused.status).toBe(401) // another account is unaffected
    const locked = await client.post('/console/sign-in', { email, password: 'another guess' })
    expect(locked.status).toBe(429)
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(0)
  })

  test(`after ${FAILURES_PER_ADDRESS} failures from one address, every account is refused from it`, async () => {
    clock.advance(SIGN_IN_WINDOW_MS)
    const client = ConsoleClient.for(server)
    await client.get('/console/sign-in')
    for (let i = 0; i < FAILURES_PER_ADDRESS; i++)
      await client.post('/console/sign-in', { email: `spray${i}@example.com`, password: 'guess guess' })
    const page = await client.post('/console/sign-in', { email: OPERATOR, password: PASSWORD })
    expect(page.status).toBe(429)
    clock.advance(SIGN_IN_WINDOW_MS)
    expect((await client.post('/console/sign-in', { email: OPERATOR, password: PASSWORD })).status).toBe(303)
  })
})

describe('CSRF', () => {
  test('a POST without Origin, from another origin, or with Origin null is refused with 403 and changes nothing', async () => {
    const client = await signedIn(server, OPERATOR)
    for (const origin of [null, 'https://evil.test', 'null', 'http://localhost.evil.test']) {
      const page = await client.post('/console/sign-out', {}, { origin })
      expect(page.status).toBe(403)
    }
    expect((await client.get(`/console/orgs/${organizationId}`)).status).toBe(200) // still signed in
  })

  test('a Referer from our origin stands in for a missing Origin; a foreign one does not', async () => {
    const client = await signedIn(server, OPERATOR)
    expect(
      (await client.post('/console/sign-out', {}, { origin: null, headers: { referer: 'https://evil.test/x' } }))
        .status,
    ).toBe(403)
    expect(
      (await client.post('/console/sign-out', {}, { origin: null, headers: { referer: `${server.url}/console` } }))
        .status,
    ).toBe(303)
  })

  test("a POST without the form token, or with another session's token, is refused", async () => {
    const client = await signedIn(server, OPERATOR)
    const other = await signedIn(server, OPERATOR)
    expect((await client.post('/console/sign-out', {}, { csrf: null })).status).toBe(403)
    expect((await client.post('/console/sign-out', {}, { csrf: other.csrf! })).status).toBe(403)
    expect((await client.post('/console/sign-out', {}, { csrf: 'x'.repeat(43) })).status).toBe(403)
    expect((await client.post('/console/sign-out')).status).toBe(303)
  })

  test('the sign-in form needs its pre-session token too (login CSRF)', async () => {
    const client = ConsoleClient.for(server)
    const page = await client.post('/console/sign-in', { email: OPERATOR, password: PASSWORD }, { csrf: null })
    expect(page.status).toBe(403)
    expect(client.hasSession()).toBe(false)
  })

  test('oversized and non-form bodies are refused before they are read', async () => {
    const client = await signedIn(server, OPERATOR)
    const big = await client.post('/console/sign-out', { filler: 'x'.repeat(70 * 1024) })
    expect(big.status).toBe(413)
    const json = await client.post('/console/sign-out', {}, { headers: { 'content-type': 'application/json' } })
    expect(json.status).toBe(415)
  })
})
