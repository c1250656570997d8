/**
 * No secret reaches the log. One full console journey (setup, keys, an invite opened and
 * used, sign-ins right and wrong, a password change, the operator's reset, sign-outs, a
 * malformed request on an invite link, an API request with a key pasted into its path),
 * then the whole log is scanned for every secret the journey created or sent.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { findUserByEmail } from '../../src/core/users/users.ts'
import { REDACTED } from '../../src/log-paths.ts'
import { startTestServer, type TestServer } from '../support/harness.ts'
import { ConsoleClient, PASSWORD, setUp, signedIn } from '../support/console-client.ts'
import { rawHttp } from '../support/raw-http.ts'
import { until } from '../support/wait.ts'

// A hang's deadline, not a speed: on a busy machine this file's server and processes take
// well over Bun's default of 5 s.
setDefaultTimeout(30_000)

let server: TestServer
beforeAll(async () => {
  server = await startTestServer()
})
afterAll(() => server.stop())

const OPERATOR = 'operator@example.com'
const MEMBER = 'member@example.com'
const MEMBER_PASSWORD = 'member first password'
const CHANGED_PASSWORD = 'member second password'
const WRONG_PASSWORD = 'a wrong guess at it'

const shown = (html: string, pattern: RegExp): string => {
  const found = pattern.exec(html)?.[1]
  if (!found) throw new Error(`not on the page: ${pattern}`)
  return found
}

test('a full console journey leaves none of its secrets in the log', async () => {
  const secrets = new Set<string>([PASSWORD, MEMBER_PASSWORD, CHANGED_PASSWORD, WRONG_PASSWORD])
  const clients: ConsoleClient[] = []
  const remember = (client: ConsoleClient) => {
    clients.push(client)
    return client
  }

  secrets.add(new URL(server.app.setupUrl!).searchParams.get('token')!)
  const { client: operator, key: firstKey, organizationId } = await setUp(server, { email: OPERATOR })
  remember(operator)
  secrets.add(firstKey)

  await operator.get(`/console/orgs/${organizationId}/keys`)
  const named = await operator.get(
    (await operator.post(`/console/orgs/${organizationId}/keys`, { name: 'CI' })).location!,
  )
  secrets.add(shown(named.html, /value="(ph_live_[0-9a-f_]+)"/))

  await operator.get(`/console/orgs/${organizationId}/members`)
  const invited = await operator.get(
    (await operator.post(`/console/orgs/${organizationId}/invites`, { role: 'member' })).location!,
  )
  const inviteToken = shown(invited.html, /\/console\/invites\/([A-Za-z0-9_-]{43})"/)
  secrets.add(inviteToken)
  const invitePath = `/console/invites/${inviteToken}`

  // Opened, mistyped, followed by a slash and a suffix, refused for a bad Host, then used.
  const member = remember(ConsoleClient.for(server))
  expect((await member.get(invitePath)).status).toBe(200)
  expect((await member.get(`${invitePath}/`)).status).toBe(200)
  expect((await member.get(`${invitePath}x`)).status).toBe(404)
  expect((await member.get(`${invitePath}/extra`)).status).toBe(404)
  expect((await member.get(`/console/sign-in?next=${encodeURIComponent(invitePath)}`)).status).toBe(200)
  const port = Number(new URL(server.url).port)
  expect(
    (await rawHttp(port, `GET ${invitePath} HTTP/1.1\r\nHost: exa[mple\r\nConnection: close\r\n\r\n`)).status,
  ).toBe(400)
  await member.get(invitePath)
  expect((await member.post(invitePath, { email: MEMBER, password: MEMBER_PASSWORD })).status).toBe(303)
  expect((await remember(ConsoleClient.for(server)).get(invitePath)).status).toBe(404)

  // Sign-ins: a wrong password, then the right one; a password change.
  const guesser = remember(ConsoleClient.for(server))
  await guesser.get('/console/sign-in')
  expect((await guesser.post('/console/sign-in', { email: MEMBER, password: WRONG_PASSWORD })).status).toBe(401)
  const again = remember(await signedIn(server, MEMBER, MEMBER_PASSWORD))
  await again.get('/console/account')
  expect(
    (await again.post('/console/account/password', { current: MEMBER_PASSWORD, password: CHANGED_PASSWORD })).status,
  ).toBe(303) // to the account page that says so (post/redirect/get)

  // The operator resets the member's password; the member signs in with it, then signs out everywhere.
  await operator.get('/console/admin')
  const memberId = (await findUserByEmail(server.app.services, MEMBER))!.id
  const reset = await operator.get((await operator.post(`/console/admin/users/${memberId}/reset-password`)).location!)
  const resetPassword = shown(reset.html, /id="new-password"[^>]*value="([^"]+)"/)
  secrets.add(resetPassword)
  const afterReset = remember(await signedIn(server, MEMBER, resetPassword))
  await afterReset.get('/console/account')
  expect((await afterReset.post('/console/account/sessions/revoke')).status).toBe(303)
  await operator.post('/console/sign-out')

  // An API client pasting its key into a path by mistake. The API logs after the response is sent: wait for its line.
  expect((await server.get(`/v1/inboxes/${firstKey}`, firstKey)).status).toBe(404)
  const apiLine = () =>
    server.logs.find((line) => line.event === 'http_request' && String(line.path).startsWith('/v1/inboxes/'))
  await until(() => apiLine() !== undefined, 'the http_request line of the API call')
  expect(apiLine()?.path).toBe(`/v1/inboxes/${firstKey.slice(0, 24)}_${REDACTED}`)

  for (const client of clients) {
    for (const [name, value] of client.cookies) if (name.startsWith('ph_session') && value) secrets.add(value)
    if (client.csrf) secrets.add(client.csrf)
  }
  for (const line of server.logs) {
    for (const value of Object.values(line))
      if (typeof value === 'string' && /ph_session(_\d+)?=/.test(value)) secrets.add(value)
  }

  const log = server.logs.map((line) => JSON.stringify(line)).join('\n')
  const leaked = [...secrets].filter((secret) => log.includes(secret) || log.includes(encodeURIComponent(secret)))
  expect(leaked).toEqual([])
  // Still logged, with the token replaced: the requests can be followed, the link cannot be used.
  const invitePaths = server.logs
    .filter((line) => line.event === 'console_request' && String(line.path).startsWith('/console/invites/'))
    .map((line) => line.path)
  expect(invitePaths.length).toBeGreaterThanOrEqual(8)
  expect(new Set(invitePaths)).toEqual(
    new Set([`/console/invites/${REDACTED}`, `/console/invites/${REDACTED}/`, `/console/invites/${REDACTED}/extra`]),
  )
})
