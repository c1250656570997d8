/**
 * Safe by construction: the security headers on every console response, the console kept
 * out of the API and its OpenAPI document; and the account page (password change, sign
 * out everywhere) and the operator's reset and revoke.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ManualClock } from '../../src/clock.ts'
import { sweepOnce } from '../../src/core/runtime/retention.ts'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { ConsoleClient, PASSWORD, setUp, signedIn } from '../support/console-client.ts'
import { rawHttp, rawRequest } from '../support/raw-http.ts'

const clock = new ManualClock('2026-07-01T08:00:00.000Z')
let server: TestServer
let operator: ConsoleClient
let organizationId: string
let key: string

beforeAll(async () => {
  server = await startTestServer({ clock })
  ;({ client: operator, organizationId, key } = await setUp(server, { email: 'op@example.com' }))
})
afterAll(() => server.stop())

describe('headers', () => {
  test('every console response, pages, redirects, errors and assets alike, carries the strict headers', async () => {
    const paths = [
      '/console/sign-in',
      '/console',
      '/console/nope',
      '/setup',
      `/console/orgs/${organizationId}`,
      '/console/assets/console.js',
      '/console/assets/console.css',
    ]
    for (const path of paths) {
      for (const client of [operator, new ConsoleClient(server.url)]) {
        const page = await client.get(path)
        const csp = page.headers.get('content-security-policy') ?? ''
        expect(csp).toContain("default-src 'none'")
        expect(csp).toContain("script-src 'self'")
        expect(csp).not.toContain('unsafe-inline')
        expect(csp).toContain("frame-ancestors 'none'")
        expect(page.headers.get('x-content-type-options')).toBe('nosniff')
        expect(page.headers.get('referrer-policy')).toBe('same-origin')
      }
    }
  })

  test('pages hold no inline script and load nothing from another host', async () => {
    const page = await operator.get(`/console/orgs/${organizationId}`)
    const scripts = [...page.html.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)]
    expect(scripts.length).toBeGreaterThan(0)
    for (const [, attributes, body] of scripts) {
      expect(body).toBe('')
      expect(attributes).toContain('src="/console/')
    }
    expect(page.html).not.toMatch(/(src|href)="(https?:)?\/\//)
    expect(page.headers.get('cache-control')).toBe('no-store')
  })

  test("the OpenAPI document names no console path, /v1 is untouched, and /v1/console is the API's 404", async () => {
    const doc = await server.get('/openapi/json')
    expect(Object.keys(doc.body.paths).filter((path) => !path.startsWith('/v1/') && path !== '/health')).toEqual([])
    const v1 = await server.get('/v1/console', key)
    expect([v1.status, v1.body.error.code]).toEqual([404, 'not_found'])
    expect((await server.get('/consoles')).status).toBe(404)
    expect((await server.get('/consoles')).headers.get('content-type')).toContain('application/json')
  })
})

describe('hostile requests', () => {
  test('odd paths, cookies, methods and bodies get a 4xx page, never a 500, and the server keeps serving', async () => {
    const signedInCookie = operator.cookies.get(operator.sessionCookieName)!
    const paths = [
      '/console/orgs/%E0%A4%A',
      '/console/orgs/%00',
      `/console/orgs/${organizationId}/keys/%ZZ/revoke`,
      '/console/invites/' + 'A'.repeat(43),
      '/console/invites/%2e%2e',
      '/console/orgs/' + 'x'.repeat(5000),
      `/console/orgs/${organizationId}/audit?before=-1e309`,
      `/console/orgs/${organizationId}/audit?before=1e20`,
      `/console/orgs/${organizationId}/audit?before=1.5`,
      '/setup?token=%FF',
      // A NUL reaches no query: PostgreSQL would refuse it with an error, not "no such row".
      '/console/live?watch=%00',
      `/console/live?watch=${organizationId}:inbox_%00`,
    ]
    const session = operator.sessionCookieName
    const csrf = session.replace('session', 'csrf')
    const cookies = [
      `${session}=${'A'.repeat(43)}`,
      `${session}=%00; ${csrf}=<script>`,
      `${session}=${signedInCookie}; ${session}=x`,
      `${session}=${'B'.repeat(10000)}`,
    ]
    for (const path of paths) {
      for (const cookie of cookies) {
        for (const method of ['GET', 'POST', 'PUT', 'OPTIONS']) {
          const response = await fetch(server.url + path, {
            method,
            headers: { cookie, origin: server.url, 'content-type': 'application/x-www-form-urlencoded' },
            body: method === 'POST' || method === 'PUT' ? '_csrf=%ZZ&a=%' : undefined,
            redirect: 'manual',
          })
          expect(response.status).toBeLessThan(500)
          await response.arrayBuffer()
        }
      }
    }
    const head = rawRequest('POST', '/console/sign-in', {
      origin: server.app.publicUrls.baseUrl,
      'content-type': 'application/x-www-form-urlencoded',
      'transfer-encoding': 'chunked',
    })
    const chunked = await rawHttp(server.app.httpPort, head + '3\r\na=b\r\n0\r\n\r\n')
    expect(chunked.status).toBe(411)
    const signIn = new ConsoleClient(server.url)
    await signIn.get('/console/sign-in')
    expect((await signIn.post('/console/sign-in', { email: 'op\u0000@example.com', password: PASSWORD })).status).toBe(
      401,
    )
    expect(server.logs.filter((line) => line.event === 'console_error')).toEqual([])
    expect((await operator.get(`/console/orgs/${organizationId}`)).status).toBe(200)
  })
})

describe('account', () => {
  test("changing one's password needs the current one and signs out the other sessions", async () => {
    const other = await signedIn(server, 'op@example.com')
    const self = await signedIn(server, 'op@example.com')
    await self.get('/console/account')
    expect(
      (await self.post('/console/account/password', { current: 'wrong one!!', password: 'new password 123' })).status,
    ).toBe(400)
    expect(
      (await self.post('/console/account/password', { current: PASSWORD, password: 'new password 123' })).status,
    ).toBe(303) // to the account page that says so (post/redirect/get)
    expect((await self.get('/console/account')).status).toBe(200)
    expect((await other.get('/console/account')).status).toBe(303)
    await self.post('/console/account/password', { current: 'new password 123', password: PASSWORD })
  })

  test('sign out everywhere ends every session of the user', async () => {
    const a = await signedIn(server, 'op@example.com')
    const b = await signedIn(server, 'op@example.com')
    await a.get('/console/account')
    expect((await a.post('/console/account/sessions/revoke')).status).toBe(303)
    expect((await a.get('/console/account')).status).toBe(303)
    expect((await b.get('/console/account')).status).toBe(303)
    operator = await signedIn(server, 'op@example.com')
  })

  test("the operator resets a user's password (shown once) and ends a user's sessions; both are audited", async () => {
    await operator.get(`/console/orgs/${organizationId}/members`)
    const invited = await operator.get(
      (await operator.post(`/console/orgs/${organizationId}/invites`, { role: 'member' })).location!,
    )
    const path = new URL(/value="(http[^"]+)"/.exec(invited.html)![1]!).pathname
    const member = new ConsoleClient(server.url)
    await member.get(path)
    await member.post(path, { email: 'm@example.com', password: PASSWORD })
    const admin = await operator.get('/console/admin')
    const userId = /users\/(user_[0-9a-f]{32})\/revoke-sessions/.exec(admin.html)![1]
    expect((await operator.post(`/console/admin/users/${userId}/revoke-sessions`)).status).toBe(303)
    expect((await member.get(`/console/orgs/${organizationId}`)).status).toBe(303)
    const reset = await operator.get((await operator.post(`/console/admin/users/${userId}/reset-password`)).location!)
    const password = /value="([0-9a-f]{5}(-[0-9a-f]{5})+)"/.exec(reset.html)![1]!
    expect((await signedIn(server, 'm@example.com', password)).hasSession()).toBe(true)
    const events = await operator.get('/console/admin')
    expect(events.html).toContain('user.password_reset')
    expect(events.html).toContain('user.sessions_revoked')
  })

  test('expired sessions are deleted by the retention sweep', async () => {
    await signedIn(server, 'op@example.com')
    clock.advance(15 * 86_400_000)
    await sweepOnce(server.app.services)
    expect(await server.countRows('select count(*) as n from sessions')).toBe(0)
  })
})
