/**
 * One-time invite links. The link carries a random token; only its SHA-256 is stored, the
 * link is shown once to the owner who made it, and it expires. Accepting marks it used in
 * the same transaction that adds the membership, so two tabs cannot both use it.
 */
import { isoTime } from '../../clock.ts'
import { newId } from '../../ids.ts'
import type { AccountServices } from '../common/services.ts'
import { auditEntry, type Actor } from '../audit/audit.ts'
import { Refusal, notFound } from '../common/refusals.ts'
import type { Role } from '../organizations/organizations.ts'
import { looksLikeToken, newToken, sha256Hex } from '../common/tokens.ts'
import { checkNewPassword, hashPassword, normaliseEmail, type User } from '../users/users.ts'

export const INVITE_LIFETIME_MS = 7 * 86_400_000

export async function createInvite(
  s: Pick<AccountServices, 'clock' | 'store'>,
  actor: Actor & { userId: string },
  input: { organizationId: string; role: Role },
) {
  const { organizationId, role } = input
  const token = newToken()
  const now = s.clock.now()
  const id = newId('invite')
  const expiresAt = isoTime(now + INVITE_LIFETIME_MS)
  await s.store.organizations.createInvite({
    invite: {
      tokenSha256: sha256Hex(token),
      id,
      organizationId,
      role,
      createdBy: actor.userId,
      createdAt: isoTime(now),
      expiresAt,
      usedAt: null,
    },
    audit: auditEntry(s, actor, {
      organizationId,
      action: 'member.invited',
      target: id,
      detail: `as ${role}, expires ${expiresAt}`,
    }),
  })
  return { id, token, expiresAt }
}

/** Invites still usable, for the members page (without tokens: those were shown once). */
export const listOpenInvites = (s: Pick<AccountServices, 'clock' | 'store'>, scope: { organizationId: string }) =>
  s.store.organizations.listOpenInvites({ organizationId: scope.organizationId, now: isoTime(s.clock.now()) })

export async function withdrawInvite(
  s: Pick<AccountServices, 'clock' | 'store'>,
  actor: Actor,
  input: { organizationId: string; inviteId: string },
): Promise<void> {
  const { organizationId, inviteId } = input
  const withdrawn = await s.store.organizations.withdrawInvite({
    organizationId,
    inviteId,
    now: isoTime(s.clock.now()),
    audit: auditEntry(s, actor, { organizationId, action: 'invite.withdrawn', target: inviteId }),
  })
  if (!withdrawn) throw notFound()
}

/** What an invite link leads to, or not_found when it is unknown, used or expired. Anyone with the link may ask. */
export async function openInvite(s: Pick<AccountServices, 'clock' | 'store'>, input: { token: unknown }) {
  const { token } = input
  if (!looksLikeToken(token)) throw notFound()
  const row = await s.store.organizations.inviteByToken(sha256Hex(token))
  if (!row || row.usedAt || Date.parse(row.expiresAt) <= s.clock.now()) throw notFound()
  return row
}

const alreadyMember = () => new Refusal('conflict', 'You are already a member of this organisation.')
const emailTaken = () => new Refusal('conflict', 'An account with this email already exists.')

/**
 * Spends the invite and adds the membership (with `newUser`, after inserting that account),
 * in one operation; a refusal writes nothing.
 */
async function accept(
  s: Pick<AccountServices, 'clock' | 'store'>,
  actor: Actor & { userId: string },
  token: unknown,
  newUser: User | null,
): Promise<{ organizationId: string }> {
  if (!looksLikeToken(token)) throw notFound()
  const result = await s.store.organizations.acceptInvite({
    tokenSha256: sha256Hex(token),
    userId: actor.userId,
    now: isoTime(s.clock.now()),
    newUser,
    audit: (invite) =>
      auditEntry(s, actor, {
        organizationId: invite.organizationId,
        action: 'member.joined',
        target: actor.label,
        detail: `as ${invite.role} via ${invite.id}`,
      }),
  })
  if ('refused' in result) {
    if (result.refused === 'already_member') throw alreadyMember()
    if (result.refused === 'email_taken') throw emailTaken()
    throw notFound()
  }
  return { organizationId: result.accepted.organizationId }
}

/** A signed-in user joins the invite's organisation and spends the invite, in one transaction. */
export const acceptInvite = (
  s: Pick<AccountServices, 'clock' | 'store'>,
  actor: Actor & { userId: string },
  input: { token: unknown },
): Promise<{ organizationId: string }> => accept(s, actor, input.token, null)

/**
 * Someone without an account follows the link: the account is made and joins the
 * organisation in one transaction, so a spent, withdrawn or expired invite (or an email
 * already taken) leaves no account behind. The password is hashed first, outside it.
 */
export async function signUpWithInvite(
  s: Pick<AccountServices, 'clock' | 'config' | 'store'>,
  visitor: { clientAddress: string },
  input: { token: unknown; email: unknown; password: unknown },
): Promise<{ user: User; organizationId: string }> {
  await openInvite(s, input)
  const email = normaliseEmail(input.email)
  if (!email) throw new Refusal('invalid', 'Enter an email address.')
  const passwordHash = await hashPassword(s, checkNewPassword(input.password))
  const user: User = { id: newId('user'), email, passwordHash, isOperator: false, createdAt: isoTime(s.clock.now()) }
  const { organizationId } = await accept(
    s,
    { userId: user.id, label: user.email, clientAddress: visitor.clientAddress },
    input.token,
    user,
  )
  return { user, organizationId }
}
