/**
 * One console request: who is signed in, the path's params, the parsed form, the CSRF token
 * for pages and the cookies to send. Who may reach a route is the route's declared access,
 * resolved by the router (access.ts) before its handler runs.
 */
import type { Actor } from '../core/audit/audit.ts'
import { Refusal } from '../core/common/refusals.ts'
import {
  createSession,
  endSession,
  validateSession,
  type SessionLifetime,
  type ValidSession,
} from '../core/sessions/sessions.ts'
import type { GuessThrottle } from '../core/users/sign-in-throttle.ts'
import { newToken } from '../core/common/tokens.ts'
import type { User } from '../core/users/users.ts'
import type { Services } from '../core/common/services.ts'
import {
  clearCookie,
  cookie,
  cookieNamesFor,
  type CookieNames,
  cookieNames as namesSent,
  readCookie,
} from './cookies.ts'
import { sessionCsrfToken } from './csrf.ts'
import { PATHS, withQuery } from './paths.ts'
import type { ConnectionTimeouts } from '../web/connection-timeouts.ts'
import type { LiveStreams } from './live-streams.ts'
import type { FailedForm, ShownOnce, ShownValue } from './shown-once.ts'

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
    const names = cookieNamesFor(deps.s.publicUrls().baseUrl)
    const token = readCookie(request, names.session)
    const session = await validateSession(deps.s, { token, lifetime: deps.lifetime })
    return new ConsoleRequest(deps, request, clientAddress, session, token, names)
  }

  private constructor(
    readonly deps: ConsoleDeps,
    readonly request: Request,
    readonly clientAddress: string,
    readonly session: ValidSession | null,
    token: string | undefined,
    /** This server's cookie names (with its port when BASE_URL is a loopback address). */
    readonly cookieNames: CookieNames,
  ) {
    this.url = new URL(request.url)
    if (this.session) {
      this.sessionToken = token
      if (this.session.renewed)
        this.setCookies.push(
          cookie(cookieNames.session, token!, {
            secure: deps.secureCookies,
            maxAgeSeconds: (this.session.expiresAt - deps.s.clock.now()) / 1000,
          }),
        )
    }
    const anon = readCookie(request, cookieNames.csrf)
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
      this.setCookies.push(cookie(this.cookieNames.csrf, this.anonCsrf, { secure: this.deps.secureCookies }))
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
    const shown = this.cookieNames.shown
    for (const held of namesSent(this.request).filter((name) => name.startsWith(shown)))
      this.setCookies.push(clearCookie(held, this.deps.secureCookies))
    this.setCookies.push(cookie(shown + id, sealed, { secure: this.deps.secureCookies, maxAgeSeconds }))
    return id
  }

  /** The value shown once that the page `id` names, while this session may still see it. */
  shown<K extends ShownValue['kind']>(id: string | null, kind: K): Extract<ShownValue, { kind: K }> | undefined {
    return this.deps.shownOnce.open(
      this.sessionToken,
      id,
      id ? readCookie(this.request, this.cookieNames.shown + id) : undefined,
      kind,
    )
  }

  /**
   * Answers a refused form with a redirect to its page (`back`, a path of ours) instead of
   * a page: reloading then shows the refusal again rather than sending the form again (for
   * a password, another guess toward the lockout). The message, status and the fields worth
   * keeping travel sealed in a cookie tied to this browser's form token, like values shown
   * once; the page's URL names them with `failed=`.
   */
  failBack(back: string, failure: Omit<FailedForm, 'kind'>): Response {
    const { id, sealed, maxAgeSeconds } = this.deps.shownOnce.seal(this.csrfToken(), {
      kind: 'failed_form',
      ...failure,
    })
    this.setCookies.push(
      cookie(this.cookieNames.failed, `${id}.${sealed}`, { secure: this.deps.secureCookies, maxAgeSeconds }),
    )
    const url = new URL(back, 'http://console.invalid')
    url.searchParams.set(FAILED_PARAM, id)
    return redirect(url.pathname + url.search)
  }

  /** The refused form this page's URL names (see failBack), while this browser holds it. */
  failedForm(): FailedForm | undefined {
    const id = this.url.searchParams.get(FAILED_PARAM)
    const held = readCookie(this.request, this.cookieNames.failed)
    if (!id || !held?.startsWith(`${id}.`)) return undefined
    return this.deps.shownOnce.open(this.csrfToken(), id, held.slice(id.length + 1), 'failed_form')
  }

  /** A field of the refused form this page shows, or undefined. */
  failedField(name: string): string | undefined {
    return this.failedForm()?.fields[name]
  }

  /** Signs the user in on this response (a fresh token, so a planted cookie is never reused). */
  async startSession(userId: string): Promise<void> {
    if (this.session) {
      await endSession(this.s, { tokenSha256: this.session.tokenSha256 })
      this.deps.streams.recheckUser(this.session.user.id)
    }
    const { token, expiresAt } = await createSession(
      this.s,
      { id: userId },
      { clientAddress: this.clientAddress, lifetime: this.deps.lifetime },
    )
    this.sessionToken = token
    this.setCookies.push(
      cookie(this.cookieNames.session, token, {
        secure: this.deps.secureCookies,
        maxAgeSeconds: (expiresAt - this.s.clock.now()) / 1000,
      }),
    )
  }

  async endSession(): Promise<void> {
    if (this.session) {
      await endSession(this.s, { tokenSha256: this.session.tokenSha256 })
      this.deps.streams.recheckUser(this.session.user.id)
    }
    this.sessionToken = undefined
    this.setCookies.push(clearCookie(this.cookieNames.session, this.deps.secureCookies))
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

/** The query parameter that names a refused form's message on the page it returns to. */
const FAILED_PARAM = 'failed'

const NOWHERE = 'http://console.invalid'

/**
 * A `next` value is followed only when it is a path inside the console; its query is kept
 * (a link's filters survive signing in), re-serialised by the URL parser, and a refused
 * form's `failed=` is dropped. Anything else leads to the console's home.
 */
export function safeNext(raw: string | null): string {
  if (!raw?.startsWith('/') || raw.startsWith('//') || raw.includes('\\') || /\p{Cc}/u.test(raw))
    return PATHS.home.link()
  let url: URL
  try {
    url = new URL(raw, NOWHERE)
  } catch {
    return PATHS.home.link()
  }
  if (url.origin !== NOWHERE || !/^\/console(\/[A-Za-z0-9_\-/.]*)?$/.test(url.pathname) || url.pathname.includes('..'))
    return PATHS.home.link()
  url.searchParams.delete(FAILED_PARAM)
  return url.pathname + url.search
}

/** Where a link's page and query are kept for after signing in. */
export const signInFor = (url: URL): string =>
  withQuery(PATHS.signIn.link(), { next: safeNext(url.pathname + url.search) })
