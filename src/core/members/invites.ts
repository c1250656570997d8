/**
 * One-time invite links. The link carries a random token; only its SHA-256 is stored, the
 * link is shown once to the owner who made it, and it expires. Accepting marks it used in
 * the same transaction that adds the membership, so two tabs cannot both use it.
 */
import { and, desc, eq, gt, isNull } from 'drizzle-orm'
import { isoTime } from '../../clock.ts'
import { newId } from '../../ids.ts'
import type { DbOrTx } from '../../storage/database.ts'
import { invites, memberships, organizations } from '../../storage/schema.ts'
import type { Services } from '../services.ts'
import { recordAudit, type Actor } from '../audit/audit.ts'
import { ConsoleError, notFound } from '../refusals.ts'
import type { Role } from '../organizations/organizations.ts'
import { looksLikeToken, newToken, sha256Hex } from '../shared/tokens.ts'

export const INVITE_LIFETIME_MS = 7 * 86_400_000

export function createInvite(s: Pick<Services, 'clock' | 'storage'>, organizationId: string, role: Role, actor: Actor & { userId: string }) {
  const token = newToken()
  const now = s.clock.now()
  const id = newId('invite')
  const expiresAt = isoTime(now + INVITE_LIFETIME_MS)
  s.storage.write((tx) => {
    tx.insert(invites)
      .values({ tokenSha256: sha256Hex(token), id, organizationId, role, createdBy: actor.userId, createdAt: isoTime(now), expiresAt })
      .run()
    recordAudit(s, tx, actor, { organizationId, action: 'member.invited', target: id, detail: `as ${role}, expires ${expiresAt}` })
  })
  return { id, token, expiresAt }
}

/** Invites still usable, for the members page (without tokens: those were shown once). */
export const listOpenInvites = (db: DbOrTx, organizationId: string, now: number) =>
  db
    .select({ id: invites.id, role: invites.role, createdAt: invites.createdAt, expiresAt: invites.expiresAt })
    .from(invites)
    .where(and(eq(invites.organizationId, organizationId), isNull(invites.usedAt), gt(invites.expiresAt, isoTime(now))))
    .orderBy(desc(invites.createdAt))
    .all()

export function withdrawInvite(s: Pick<Services, 'clock' | 'storage'>, organizationId: string, inviteId: string, actor: Actor): void {
  s.storage.write((tx) => {
    const done = tx
      .update(invites)
      .set({ usedAt: isoTime(s.clock.now()) })
      .where(and(eq(invites.id, inviteId), eq(invites.organizationId, organizationId), isNull(invites.usedAt)))
      .returning()
      .get()
    if (!done) throw notFound()
    recordAudit(s, tx, actor, { organizationId, action: 'invite.withdrawn', target: inviteId })
  })
}

/** What an invite link leads to, or not_found when it is unknown, used or expired. */
export function openInvite(db: DbOrTx, token: unknown, now: number) {
  if (!looksLikeToken(token)) throw notFound()
  const row = db
    .select({ id: invites.id, organizationId: invites.organizationId, organizationName: organizations.name, role: invites.role, expiresAt: invites.expiresAt, usedAt: invites.usedAt })
    .from(invites)
    .innerJoin(organizations, eq(organizations.id, invites.organizationId))
    .where(eq(invites.tokenSha256, sha256Hex(token)))
    .get()
  if (!row || row.usedAt || Date.parse(row.expiresAt) <= now) throw notFound()
  return row
}

/** Adds the user to the invite's organisation and spends the invite, in the caller's transaction. */
export function acceptInvite(s: Pick<Services, 'clock'>, tx: DbOrTx, token: unknown, user: { id: string; email: string }, clientAddress: string): { organizationId: string } {
  const now = s.clock.now()
  const invite = openInvite(tx, token, now)
  const already = tx
    .select({ role: memberships.role })
    .from(memberships)
    .where(and(eq(memberships.organizationId, invite.organizationId), eq(memberships.userId, user.id)))
    .get()
  if (already) throw new ConsoleError('conflict', 'You are already a member of this organisation.')
  tx.update(invites)
    .set({ usedAt: isoTime(now) })
    .where(eq(invites.id, invite.id))
    .run()
  tx.insert(memberships)
    .values({ organizationId: invite.organizationId, userId: user.id, role: invite.role, createdAt: isoTime(now) })
    .run()
  recordAudit(
    s,
    tx,
    { userId: user.id, label: user.email, clientAddress },
    { organizationId: invite.organizationId, action: 'member.joined', target: user.email, detail: `as ${invite.role} via ${invite.id}` },
  )
  return { organizationId: invite.organizationId }
}
