/**
 * Console sessions, Lucia's shape: a random token in the cookie, its SHA-256 as the row's
 * key, an expiry that slides forward while the session is used, and every session of a
 * user revocable at once.
 */
import { isoTime } from '../../clock.ts'
import type { AccountServices } from '../common/services.ts'
import { auditEntry, type Actor } from '../audit/audit.ts'
import { looksLikeToken, newToken, sha256Hex } from '../common/tokens.ts'
import type { User } from '../users/users.ts'

const DAY = 86_400_000

export interface SessionLifetime {
  /** Idle lifetime: a session unused this long is over. */
  days: number
}

export interface ValidSession {
  user: User
  tokenSha256: string
  expiresAt: number
  /** True when the expiry moved: the cookie must be sent again with the new Max-Age. */
  renewed: boolean
}

/** A new session of the user signing in (or just signed up) from `clientAddress`; the token goes in the cookie. */
export async function createSession(
  s: Pick<AccountServices, 'clock' | 'store'>,
  user: { id: string },
  input: { clientAddress: string; lifetime: SessionLifetime },
): Promise<{ token: string; expiresAt: number }> {
  const token = newToken()
  const now = s.clock.now()
  const expiresAt = now + input.lifetime.days * DAY
  await s.store.accounts.insertSession({
    tokenSha256: sha256Hex(token),
    userId: user.id,
    createdAt: isoTime(now),
    expiresAt: isoTime(expiresAt),
    clientAddress: input.clientAddress,
  })
  return { token, expiresAt }
}

/**
 * The session for a cookie token, or null. Past half its lifetime the expiry moves to a
 * full lifetime from now: one write per half-lifetime, not one per request.
 */
export async function validateSession(
  s: Pick<AccountServices, 'clock' | 'store'>,
  input: { token: string | undefined; lifetime: SessionLifetime },
): Promise<ValidSession | null> {
  const { token, lifetime } = input
  if (!looksLikeToken(token)) return null
  const tokenSha256 = sha256Hex(token)
  const now = s.clock.now()
  const found = await s.store.accounts.useSession({
    tokenSha256,
    now: isoTime(now),
    renewBefore: isoTime(now + (lifetime.days * DAY) / 2),
    renewTo: isoTime(now + lifetime.days * DAY),
  })
  if (!found) return null
  return { user: found.user, tokenSha256, expiresAt: Date.parse(found.expiresAt), renewed: found.renewed }
}

/**
 * True while the session is unexpired and its user still belongs to the organisation: what
 * a long-lived response (the viewer's event stream) rechecks, since it outlives the request
 * that checked them. Reads only; unlike validateSession it never extends the session.
 */
export async function sessionStillReads(
  s: Pick<AccountServices, 'clock' | 'store'>,
  input: { tokenSha256: string; organizationId: string },
): Promise<boolean> {
  const expiresAt = await s.store.accounts.sessionExpiryInOrganization(input)
  return expiresAt !== undefined && Date.parse(expiresAt) > s.clock.now()
}

/** Signs out this session (the sign-out button, or a cookie of a session that must end). */
export const endSession = (s: Pick<AccountServices, 'store'>, input: { tokenSha256: string }): Promise<void> =>
  s.store.accounts.deleteSession(input.tokenSha256)

/**
 * Sign out everywhere (the user's own button, or the operator's for a user): every session
 * ends and the audit row goes in with it, in one transaction.
 */
export async function signOutEverywhere(
  s: Pick<AccountServices, 'clock' | 'store'>,
  actor: Actor,
  input: { user: { id: string; email: string } },
): Promise<number> {
  const { user } = input
  return s.store.accounts.deleteSessionsOfUser({
    userId: user.id,
    audit: (ended) =>
      auditEntry(s, actor, {
        organizationId: null,
        action: 'user.sessions_revoked',
        target: user.email,
        detail: `${ended} sessions`,
      }),
  })
}

export const listSessions = (s: Pick<AccountServices, 'store'>, user: { id: string }) =>
  s.store.accounts.listSessions(user.id)

/** Expired rows are harmless (refused on use) but would pile up; answers how many were deleted. */
export const endExpiredSessions = (s: Pick<AccountServices, 'clock' | 'store'>): Promise<number> =>
  s.store.accounts.deleteExpiredSessions(isoTime(s.clock.now()))
