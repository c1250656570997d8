/** Members of an organisation: list, change role, remove. An organisation always keeps an owner. */
import { isoTime } from '../../clock.ts'
import type { MemberListing } from '../../storage/port/organizations.ts'
import type { AccountServices } from '../common/services.ts'
import { auditEntry, type Actor } from '../audit/audit.ts'
import { Refusal, notFound } from '../common/refusals.ts'
import type { Role } from '../organizations/organizations.ts'

export const listMembers = (
  s: Pick<AccountServices, 'store'>,
  scope: { organizationId: string },
): Promise<MemberListing[]> => s.store.organizations.listMembers(scope.organizationId)

const lastOwner = () =>
  new Refusal('conflict', 'An organisation needs at least one owner: make another member an owner first.')

/** Owners change roles (the caller's permission is checked by the caller's guard). */
export async function changeRole(
  s: Pick<AccountServices, 'clock' | 'store'>,
  actor: Actor,
  input: { organizationId: string; userId: string; role: Role },
): Promise<void> {
  const { organizationId, userId, role } = input
  const result = await s.store.organizations.changeRole({
    organizationId,
    userId,
    role,
    audit: (member) =>
      auditEntry(s, actor, {
        organizationId,
        action: 'member.role_changed',
        target: member.email,
        detail: `${member.role} -> ${role}`,
      }),
  })
  if ('refused' in result) throw result.refused === 'last_owner' ? lastOwner() : notFound()
}

/**
 * Removes a member (an owner removing someone, or anyone leaving); never the last owner. The
 * keys they made stay active (they are the organisation's); the audit row says how many, and
 * the keys page marks them.
 */
export async function removeMember(
  s: Pick<AccountServices, 'clock' | 'store'>,
  actor: Actor,
  input: { organizationId: string; userId: string },
): Promise<void> {
  const { organizationId, userId } = input
  const result = await s.store.organizations.removeMember({
    organizationId,
    userId,
    audit: ({ email, activeKeysMade: keys }) => {
      const detail = [
        actor.userId === userId ? 'left' : '',
        keys > 0 ? `${keys} active key${keys === 1 ? '' : 's'} they made stay active` : '',
      ]
        .filter(Boolean)
        .join('; ')
      return auditEntry(s, actor, { organizationId, action: 'member.removed', target: email, detail })
    },
  })
  if ('refused' in result) throw result.refused === 'last_owner' ? lastOwner() : notFound()
}

/**
 * The operator joins an organisation as owner: the way into one made by `cli orgs create`,
 * which has no members yet. Joining twice changes nothing.
 */
export async function joinAsOwner(
  s: Pick<AccountServices, 'clock' | 'store'>,
  actor: Actor & { userId: string },
  input: { organizationId: string },
): Promise<void> {
  const { organizationId } = input
  const outcome = await s.store.organizations.joinAsOwner({
    organizationId,
    userId: actor.userId,
    now: isoTime(s.clock.now()),
    audit: auditEntry(s, actor, {
      organizationId,
      action: 'member.joined',
      target: actor.label,
      detail: 'as owner, by the operator',
    }),
  })
  if (outcome === 'not_found') throw notFound()
}
