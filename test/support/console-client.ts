/**
 * A browser stand-in for console tests over real HTTP: keeps cookies, follows nothing by
 * itself (redirects are asserted), sends the Origin a browser would, and repeats the last
 * page's CSRF token in forms unless told otherwise. Each request is a new connection, so on
 * the two-machine backend (harness.ts) consecutive requests go to alternate machines.
 */
import type { TestServer } from './harness.ts'
import { cookieNamesFor } from '../../src/console/cookies.ts'

export interface Page {
  status: number
  headers: Headers
  html: string
  location: string | null
  /** For a refused form: the redirect the client followed to this page. */
  refusedVia?: string
}

const CSRF = /name="_csrf" value="([^"]+)"/

export class ConsoleClient {
  readonly cookies = new Map<string, string>()
  csrf: string | undefined

  constructor(readonly baseUrl: string) {}

  static for(server: TestServer): ConsoleClient {
    return new ConsoleClient(server.url)
  }

  /** The session cookie's name on this server (it carries the port on a loopback BASE_URL). */
  get sessionCookieName(): string {
    return cookieNamesFor(this.baseUrl).session
  }

  /** Whether this browser holds a session cookie. */
  hasSession(): boolean {
    return this.cookies.has(this.sessionCookieName)
  }

  /** The Cookie header this browser sends (for a request made without the client, such as a stream). */
  cookieHeader(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ')
  }

  private async send(path: string, init: RequestInit & { headers: Record<string, string> }): Promise<Page> {
    if (this.cookies.size > 0) init.headers.cookie = this.cookieHeader()
    // A new connection per request, as a browser behind Fly's proxy may be answered by a
    // different machine each time: on the pair every console request alternates machines.
    const response = await fetch(this.baseUrl + path, { ...init, redirect: 'manual', keepalive: false })
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';')
      const eq = pair!.indexOf('=')
      const name = pair!.slice(0, eq)
      const value = pair!.slice(eq + 1)
      if (value === '' || /Max-Age=0\b/.test(line)) this.cookies.delete(name)
      else this.cookies.set(name, value)
    }
    const html = await response.text()
    const token = CSRF.exec(html)?.[1]
    if (token) this.csrf = token
    return { status: response.status, headers: response.headers, html, location: response.headers.get('location') }
  }

  get(path: string, headers: Record<string, string> = {}): Promise<Page> {
    return this.send(path, { method: 'GET', headers })
  }

  /** A form post; `origin: null` omits the header, `csrf: null` omits the token. A field given as a list is sent once per value (ticked checkboxes). */
  post(
    path: string,
    fields: Record<string, string | string[]> = {},
    options: { origin?: string | null; csrf?: string | null; headers?: Record<string, string> } = {},
  ): Promise<Page> {
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', ...options.headers }
    const origin = options.origin === undefined ? this.baseUrl : options.origin
    if (origin !== null) headers.origin = origin
    const csrf = options.csrf === undefined ? this.csrf : options.csrf
    const body = new URLSearchParams(csrf === null || csrf === undefined ? {} : { _csrf: csrf })
    for (const [name, value] of Object.entries(fields))
      for (const one of Array.isArray(value) ? value : [value]) body.append(name, one)
    return this.send(path, { method: 'POST', headers, body: body.toString() }).then(async (page) => {
      // A refused form redirects to its page with the message (`failed=`); like a browser,
      // the client follows that one redirect, so a test reads the page a person sees, with
      // its status. `refusedVia` keeps the redirect for tests of the redirect itself.
      if (page.status !== 303 || !page.location || !new URL(page.location, this.baseUrl).searchParams.has('failed'))
        return page
      return { ...(await this.get(page.location)), refusedVia: page.location }
    })
  }
}

export const PASSWORD = 'correct horse battery'

/** The setup link the server printed at start-up (the log names only `/setup`: the token is a secret). */
export function setupPath(server: TestServer): string {
  if (!server.app.setupUrl) throw new Error('no setup link: a console user exists')
  const url = new URL(server.app.setupUrl)
  return url.pathname + url.search
}

/** Runs /setup as the operator; returns the signed-in client, the organisation id and the first key. */
export async function setUp(
  server: TestServer,
  options: { email?: string; preset?: 'hosted' | 'local'; organization?: string } = {},
) {
  const client = ConsoleClient.for(server)
  const path = setupPath(server)
  const form = await client.get(path)
  if (form.status !== 200) throw new Error(`setup page answered ${form.status}`)
  const token = new URL(path, 'http://x').searchParams.get('token')!
  const done = await client.post('/setup', {
    token,
    email: options.email ?? 'operator@example.com',
    password: PASSWORD,
    organization: options.organization ?? 'Acme',
    preset: options.preset ?? 'hosted',
  })
  // post/redirect/get: the key is shown on the page setup redirects to.
  if (done.status !== 303 || !done.location) throw new Error(`setup answered ${done.status}: ${done.html}`)
  const shown = await client.get(done.location)
  const key = /value="(ph_live_[0-9a-f_]+)"/.exec(shown.html)?.[1]
  const organizationId = /\/console\/orgs\/(org_[0-9a-f]{32})/.exec(shown.html)?.[1]
  if (!key || !organizationId) throw new Error('setup page shows no key or organisation')
  return { client, key, organizationId }
}

/** Signs a user in with a fresh client. */
export async function signedIn(
  server: Pick<TestServer, 'url'>,
  email: string,
  password = PASSWORD,
): Promise<ConsoleClient> {
  const client = new ConsoleClient(server.url)
  await client.get('/console/sign-in')
  const page = await client.post('/console/sign-in', { email, password, next: '/console' })
  if (page.status !== 303) throw new Error(`sign-in answered ${page.status}`)
  // Load a signed-in page, as a browser would, so forms carry the session's CSRF token.
  const landing = await client.get('/console')
  if (landing.location) await client.get(landing.location)
  return client
}

/** An owner invites `email`, who opens the link and creates an account; returns the new member, signed in. */
export async function addMember(
  server: Pick<TestServer, 'url'>,
  owner: ConsoleClient,
  organizationId: string,
  email: string,
  password = PASSWORD,
): Promise<ConsoleClient> {
  await owner.get(`/console/orgs/${organizationId}/members`)
  const made = await owner.post(`/console/orgs/${organizationId}/invites`, { role: 'member' })
  // post/redirect/get: the link is shown on the page the form redirects to.
  const created = made.location ? await owner.get(made.location) : made
  const link = /value="https?:\/\/[^"/]+(\/console\/invites\/[A-Za-z0-9_-]{43})"/.exec(created.html)?.[1]
  if (!link) throw new Error(`no invite link on the page (${created.status})`)
  const member = new ConsoleClient(server.url)
  await member.get(link)
  const joined = await member.post(link, { email, password })
  if (joined.status !== 303) throw new Error(`joining answered ${joined.status}`)
  return member
}
