/**
 * One console request: who is signed in, the path's params, the parsed form, the CSRF token
 * for pages and the cookies to send. Who may reach a route is the route's declared access,
 * resolved by the router (access.ts) before its handler runs.
 */
import type { Actor } from '../core/audit/audit.ts'
import { Refusal } from '../core/refusals.ts'
import { createSession, endSession, validateSession, type SessionLifetime, type ValidSession } from '../core/sessions/sessions.ts'
import type { GuessThrottle } from '../core/users/sign-in-throttle.ts'
import { newToken } from '../core/helpers/tokens.ts'
import type { User } from '../core/users/users.ts'
import type { Services } from '../core/services.ts'
import { ANON_CSRF_COOKIE, clearCookie, cookie, cookieNames, readCookie, SESSION_COOKIE } from './cookies.ts'
import { sessionCsrfToken } from './csrf.ts'
import { PATHS } from './paths.ts'
import type { ConnectionTimeouts } from '../web/connection-timeouts.ts'
import type { LiveStreams } from './live-streams.ts'
import { isShownCookie, type ShownOnce, shownCookieName, type ShownValue } from './shown-once.ts'

export interface ConsoleDeps {
  s: Services
  throttle: GuessThrottle
  lifetime: SessionLifetime
  /** BASE_URL is https: cookies get `Secure`. */
  secureCookies: boolean
  /** `host:port` of the SMTP listener for the examples on pages (known once it listens). */
  smtpAddress: () => string
  /** The inbox pages' open event streams. */
  streams: LiveStreams
  /** Lets a live stream's connection outlast HTTP_IDLE_TIMEOUT_SECONDS. */
  connections: ConnectionTimeouts
  /** Seals values shown once into a cookie for the GET a create redirects to. */
  shownOnce: ShownOnce
}

/** `Name` is the route's `:name` segments: the router fills each one, decoded, before the handler runs. */
export class ConsoleRequest<Name extends string = string> {
  readonly url: URL
  params = {} as Record<Name, string>
  /** The urlencoded body of a POST (already CSRF-checked by the router); empty for GET. */
  form = new URLSearchParams()
  /** Set-Cookie values the router adds to the response. */
  readonly setCookies: string[] = []
  private sessionToken: string | undefined
  private anonCsrf: string | undefined

  /** The request with its session cookie checked (and renewed past half its lifetime). */
  static async open(deps: ConsoleDeps, request: Request, clientAddress: string): Promise<ConsoleRequest> {
    const token = readCookie(request, SESSION_COOKIE)
    const session = await validateSession(deps.s, { token, lifetime: deps.lifetime })
    return new ConsoleRequest(deps, request, clientAddress, session, token)
  }

  private constructor(
    readonly deps: ConsoleDeps,
    readonly request: Request,
    readonly clientAddress: string,
    readonly session: ValidSession | null,
    token: string | undefined,
  ) {
    this.url = new URL(request.url)
    if (this.session) {
      this.sessionToken = token
      if (this.session.renewed) this.setCookies.push(cookie(SESSION_COOKIE, token!, { secure: deps.secureCookies, maxAgeSeconds: (this.session.expiresAt - deps.s.clock.now()) / 1000 }))
    }
    const anon = readCookie(request, ANON_CSRF_COOKIE)
    this.anonCsrf = anon && /^[A-Za-z0-9_-]{43}$/.test(anon) ? anon : undefined
  }

  get s(): Services {
    return this.deps.s
  }

  get user(): User | null {
    return this.session?.user ?? null
  }

  /** The signed-in user; otherwise `unauthenticated` (GET pages redirect to sign-in). */
  requireUser(): User {
    if (!this.session) throw new Refusal('unauthenticated', 'Sign in to continue.')
    return this.session.user
  }

  actor(): Actor & { userId: string } {
    const user = this.requireUser()
    return { userId: user.id, label: user.email, clientAddress: this.clientAddress }
  }

  /** The token every form repeats in `_csrf`: tied to the session, or to a pre-sign-in cookie. */
  csrfToken(): string {
    if (this.sessionToken) return sessionCsrfToken(this.sessionToken)
    if (!this.anonCsrf) {
      this.anonCsrf = newToken()
      this.setCookies.push(cookie(ANON_CSRF_COOKIE, this.anonCsrf, { secure: this.deps.secureCookies }))
    }
    return this.anonCsrf
  }

  /** The token a POST must carry, or undefined when the browser has none. */
  expectedCsrf(): string | undefined {
    return this.sessionToken ? sessionCsrfToken(this.sessionToken) : this.anonCsrf
  }

  /**
   * Holds a value shown once for this browser's current session (a new one after
   * startSession), in a sealed cookie on this response; returns the id its GET page names.
   */
  holdShown(value: ShownValue): string {
    if (!this.sessionToken) throw new Refusal('unauthenticated', 'Sign in to continue.')
    const { id, sealed, maxAgeSeconds } = this.deps.shownOnce.seal(this.sessionToken, value)
    // The newest value replaces those held before: otherwise each create added a cookie of
    // about 300 bytes for 10 minutes, and a few dozen creates in that time would push the
    // browser's Cookie header past the server's header limit, failing every console page.
    for (const held of cookieNames(this.request).filter(isShownCookie)) this.setCookies.push(clearCookie(held, this.deps.secureCookies))
    this.setCookies.push(cookie(shownCookieName(id), sealed, { secure: this.deps.secureCookies, maxAgeSeconds }))
    return id
  }

  /** The value shown once that the page `id` names, while this session may still see it. */
  shown<K extends ShownValue['kind']>(id: string | null, kind: K): Extract<ShownValue, { kind: K }> | undefined {
    return this.deps.shownOnce.open(this.sessionToken, id, id ? readCookie(this.request, shownCookieName(id)) : undefined, kind)
  }

  /** Signs the user in on this response (a fresh token, so a planted cookie is never reused). */
  async startSession(userId: string): Promise<void> {
    if (this.session) {
      await endSession(this.s, { tokenSha256: this.session.tokenSha256 })
      this.deps.streams.recheckUser(this.session.user.id)
    }
    const { token, expiresAt } = await createSession(this.s, { id: userId }, { clientAddress: this.clientAddress, lifetime: this.deps.lifetime })
    this.sessionToken = token
    this.setCookies.push(cookie(SESSION_COOKIE, token, { secure: this.deps.secureCookies, maxAgeSeconds: (expiresAt - this.s.clock.now()) / 1000 }))
  }

  async endSession(): Promise<void> {
    if (this.session) {
      await endSession(this.s, { tokenSha256: this.session.tokenSha256 })
      this.deps.streams.recheckUser(this.session.user.id)
    }
    this.sessionToken = undefined
    this.setCookies.push(clearCookie(SESSION_COOKIE, this.deps.secureCookies))
  }

  /** A form field as a string ('' when absent). */
  field(name: string): string {
    return this.form.get(name) ?? ''
  }
}

/** 303 to a path of ours (never to a URL taken from the request, so no open redirect). */
export function redirect(path: string): Response {
  return new Response(null, { status: 303, headers: { location: path } })
}

/** A `next` value is followed only when it is a path inside the console. */
export const safeNext = (raw: string | null): string => (raw && /^\/console(\/[A-Za-z0-9_\-/.]*)?$/.test(raw) && !raw.includes('..') ? raw : PATHS.home.link())
