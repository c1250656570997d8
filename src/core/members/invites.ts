/**
 * One-time invite links. The link carries a random token; only its SHA-256 is stored, the
 * link is shown once to the owner who made it, and it expires. Accepting marks it used in
 * the same transaction that adds the membership, so two tabs cannot both use it.
 */
import { and, desc, eq, gt, isNull } from 'drizzle-orm'
import { isoTime } from '../../clock.ts'
import { newId } from '../../ids.ts'
import { invites, memberships, organizations } from '../../storage/schema.ts'
import type { AccountServices } from '../services.ts'
import { transaction } from '../transaction.ts'
import { recordAudit, type Actor } from '../audit/audit.ts'
import { Refusal, notFound } from '../refusals.ts'
import type { Role } from '../organizations/organizations.ts'
import { looksLikeToken, newToken, sha256Hex } from '../helpers/tokens.ts'
import { checkNewPassword, hashPassword, insertUser, normaliseEmail, type User } from '../users/users.ts'

export const INVITE_LIFETIME_MS = 7 * 86_400_000

export function createInvite(s: Pick<AccountServices, 'clock' | 'storage'>, actor: Actor & { userId: string }, input: { organizationId: string; role: Role }) {
  const { organizationId, role } = input
  const token = newToken()
  const now = s.clock.now()
  const id = newId('invite')
  const expiresAt = isoTime(now + INVITE_LIFETIME_MS)
  transaction(s, (tx) => {
    tx.insert(invites)
      .values({ tokenSha256: sha256Hex(token), id, organizationId, role, createdBy: actor.userId, createdAt: isoTime(now), expiresAt })
      .run()
    recordAudit(s, actor, { organizationId, action: 'member.invited', target: id, detail: `as ${role}, expires ${expiresAt}` })
  })
  return { id, token, expiresAt }
}

/** Invites still usable, for the members page (without tokens: those were shown once). */
export const listOpenInvites = (s: Pick<AccountServices, 'clock' | 'storage'>, scope: { organizationId: string }) =>
  s.storage.db
    .select({ id: invites.id, role: invites.role, createdAt: invites.createdAt, expiresAt: invites.expiresAt })
    .from(invites)
    .where(and(eq(invites.organizationId, scope.organizationId), isNull(invites.usedAt), gt(invites.expiresAt, isoTime(s.clock.now()))))
    .orderBy(desc(invites.createdAt))
    .all()

export function withdrawInvite(s: Pick<AccountServices, 'clock' | 'storage'>, actor: Actor, input: { organizationId: string; inviteId: string }): void {
  const { organizationId, inviteId } = input
  transaction(s, (tx) => {
    const done = tx
      .update(invites)
      .set({ usedAt: isoTime(s.clock.now()) })
      .where(and(eq(invites.id, inviteId), eq(invites.organizationId, organizationId), isNull(invites.usedAt)))
      .returning()
      .get()
    if (!done) throw notFound()
    recordAudit(s, actor, { organizationId, action: 'invite.withdrawn', target: inviteId })
  })
}

/** What an invite link leads to, or not_found when it is unknown, used or expired. Anyone with the link may ask. */
export function openInvite(s: Pick<AccountServices, 'clock' | 'storage'>, input: { token: unknown }) {
  const { token } = input
  if (!looksLikeToken(token)) throw notFound()
  const row = s.storage.db
    .select({ id: invites.id, organizationId: invites.organizationId, organizationName: organizations.name, role: invites.role, expiresAt: invites.expiresAt, usedAt: invites.usedAt })
    .from(invites)
    .innerJoin(organizations, eq(organizations.id, invites.organizationId))
    .where(eq(invites.tokenSha256, sha256Hex(token)))
    .get()
  if (!row || row.usedAt || Date.parse(row.expiresAt) <= s.clock.now()) throw notFound()
  return row
}

/** A signed-in user joins the invite's organisation and spends the invite, in one transaction. */
export function acceptInvite(s: Pick<AccountServices, 'clock' | 'storage'>, actor: Actor & { userId: string }, input: { token: unknown }): { organizationId: string } {
  return transaction(s, (tx) => {
    const now = s.clock.now()
    const invite = openInvite(s, input)
    const already = tx
      .select({ role: memberships.role })
      .from(memberships)
      .where(and(eq(memberships.organizationId, invite.organizationId), eq(memberships.userId, actor.userId)))
      .get()
    if (already) throw new Refusal('conflict', 'You are already a member of this organisation.')
    tx.update(invites)
      .set({ usedAt: isoTime(now) })
      .where(eq(invites.id, invite.id))
      .run()
    tx.insert(memberships)
      .values({ organizationId: invite.organizationId, userId: actor.userId, role: invite.role, createdAt: isoTime(now) })
      .run()
    recordAudit(s, actor, { organizationId: invite.organizationId, action: 'member.joined', target: actor.label, detail: `as ${invite.role} via ${invite.id}` })
    return { organizationId: invite.organizationId }
  })
}

/**
 * Someone without an account follows the link: the account is made and joins the
 * organisation in one transaction, so a spent, withdrawn or expired invite (or an email
 * already taken) leaves no account behind. The password is hashed first, outside it.
 */
export async function signUpWithInvite(
  s: AccountServices,
  visitor: { clientAddress: string },
  input: { token: unknown; email: unknown; password: unknown },
): Promise<{ user: User; organizationId: string }> {
  openInvite(s, input)
  const email = normaliseEmail(input.email)
  if (!email) throw new Refusal('invalid', 'Enter an email address.')
  const passwordHash = await hashPassword(s, checkNewPassword(input.password))
  return transaction(s, (tx) => {
    const user = insertUser(s, tx, { email, passwordHash })
    const { organizationId } = acceptInvite(s, { userId: user.id, label: user.email, clientAddress: visitor.clientAddress }, input)
    return { user, organizationId }
  })
}
