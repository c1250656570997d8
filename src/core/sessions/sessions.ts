/**
 * Console sessions, Lucia's shape: a random token in the cookie, its SHA-256 as the row's
 * key, an expiry that slides forward while the session is used, and every session of a
 * user revocable at once.
 */
import { and, eq, lt, sql } from 'drizzle-orm'
import { isoTime } from '../../clock.ts'
import type { DbOrTx } from '../../storage/database.ts'
import { preparedPerDatabase } from '../../storage/prepared.ts'
import { memberships, sessions, users } from '../../storage/schema.ts'
import type { AccountServices } from '../services.ts'
import { transaction } from '../transaction.ts'
import { recordAudit, type Actor } from '../audit/audit.ts'
import { looksLikeToken, newToken, sha256Hex } from '../helpers/tokens.ts'
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
export function createSession(s: Pick<AccountServices, 'clock' | 'storage'>, user: { id: string }, input: { clientAddress: string; lifetime: SessionLifetime }): { token: string; expiresAt: number } {
  const token = newToken()
  const now = s.clock.now()
  const expiresAt = now + input.lifetime.days * DAY
  transaction(s, (tx) =>
    tx
      .insert(sessions)
      .values({ tokenSha256: sha256Hex(token), userId: user.id, createdAt: isoTime(now), expiresAt: isoTime(expiresAt), clientAddress: input.clientAddress })
      .run(),
  )
  return { token, expiresAt }
}

/**
 * The session for a cookie token, or null. Past half its lifetime the expiry moves to a
 * full lifetime from now: one write per half-lifetime, not one per request.
 */
export function validateSession(s: Pick<AccountServices, 'clock' | 'storage'>, input: { token: string | undefined; lifetime: SessionLifetime }): ValidSession | null {
  const { token, lifetime } = input
  if (!looksLikeToken(token)) return null
  const { db } = s.storage
  const tokenSha256 = sha256Hex(token)
  const row = db.select().from(sessions).innerJoin(users, eq(users.id, sessions.userId)).where(eq(sessions.tokenSha256, tokenSha256)).get()
  if (!row) return null
  const now = s.clock.now()
  let expiresAt = Date.parse(row.sessions.expiresAt)
  if (expiresAt <= now) {
    db.delete(sessions).where(eq(sessions.tokenSha256, tokenSha256)).run()
    return null
  }
  let renewed = false
  if (expiresAt - now < (lifetime.days * DAY) / 2) {
    expiresAt = now + lifetime.days * DAY
    db.update(sessions)
      .set({ expiresAt: isoTime(expiresAt) })
      .where(eq(sessions.tokenSha256, tokenSha256))
      .run()
    renewed = true
  }
  return { user: row.users, tokenSha256, expiresAt, renewed }
}

// Prepared once per database: a live stream asks this before every event it sends.
const sessionMembership = preparedPerDatabase((db) =>
  db
    .select({ expiresAt: sessions.expiresAt })
    .from(sessions)
    .innerJoin(memberships, and(eq(memberships.userId, sessions.userId), eq(memberships.organizationId, sql.placeholder('organizationId'))))
    .where(eq(sessions.tokenSha256, sql.placeholder('tokenSha256')))
    .prepare(),
)

/**
 * True while the session is unexpired and its user still belongs to the organisation: what
 * a long-lived response (the viewer's event stream) rechecks, since it outlives the request
 * that checked them. Reads only; unlike validateSession it never extends the session.
 */
export function sessionStillReads(s: Pick<AccountServices, 'clock' | 'storage'>, input: { tokenSha256: string; organizationId: string }): boolean {
  const row = sessionMembership(s.storage.db).get(input)
  return row !== undefined && Date.parse(row.expiresAt) > s.clock.now()
}

/** Signs out this session (the sign-out button, or a cookie of a session that must end). */
export const endSession = (s: Pick<AccountServices, 'storage'>, input: { tokenSha256: string }): void => {
  transaction(s, (tx) => tx.delete(sessions).where(eq(sessions.tokenSha256, input.tokenSha256)).run())
}

/**
 * Sign out everywhere (the user's own button, or the operator's for a user): every session
 * ends and the audit row goes in with it, in one transaction.
 */
export function signOutEverywhere(s: Pick<AccountServices, 'clock' | 'storage'>, actor: Actor, input: { user: { id: string; email: string } }): number {
  const { user } = input
  return transaction(s, (tx) => {
    const ended = tx.delete(sessions).where(eq(sessions.userId, user.id)).returning().all().length
    recordAudit(s, actor, { organizationId: null, action: 'user.sessions_revoked', target: user.email, detail: `${ended} sessions` })
    return ended
  })
}

export const listSessions = (s: Pick<AccountServices, 'storage'>, user: { id: string }) =>
  s.storage.db
    .select({ createdAt: sessions.createdAt, expiresAt: sessions.expiresAt, clientAddress: sessions.clientAddress, tokenSha256: sessions.tokenSha256 })
    .from(sessions)
    .where(eq(sessions.userId, user.id))
    .all()

/** Expired rows are harmless (refused on use) but would pile up; the retention sweeper calls this. */
export const deleteExpiredSessions = (db: DbOrTx, now: number): void => {
  db.delete(sessions)
    .where(lt(sessions.expiresAt, isoTime(now)))
    .run()
}
