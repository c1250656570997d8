/** Members of an organisation: list, change role, remove. An organisation always keeps an owner. */
import { and, asc, eq, sql } from 'drizzle-orm'
import { isoTime } from '../../clock.ts'
import type { DbOrTx } from '../../storage/database.ts'
import { memberships, organizations, users } from '../../storage/schema.ts'
import type { AccountServices } from '../services.ts'
import { transaction } from '../transaction.ts'
import { recordAudit, type Actor } from '../audit/audit.ts'
import { Refusal, notFound } from '../refusals.ts'
import { countActiveKeysMadeBy } from '../api-keys/keys.ts'
import type { Role } from '../organizations/organizations.ts'

export const listMembers = (s: Pick<AccountServices, 'storage'>, scope: { organizationId: string }) =>
  s.storage.db
    .select({ userId: users.id, email: users.email, role: memberships.role, joinedAt: memberships.createdAt })
    .from(memberships)
    .innerJoin(users, eq(users.id, memberships.userId))
    .where(eq(memberships.organizationId, scope.organizationId))
    .orderBy(asc(memberships.createdAt))
    .all()

const ownerCount = (tx: DbOrTx, organizationId: string): number =>
  tx
    .select({ n: sql<number>`count(*)` })
    .from(memberships)
    .where(and(eq(memberships.organizationId, organizationId), eq(memberships.role, 'owner')))
    .get()!.n

function memberRow(tx: DbOrTx, organizationId: string, userId: string) {
  const row = tx
    .select({ role: memberships.role, email: users.email })
    .from(memberships)
    .innerJoin(users, eq(users.id, memberships.userId))
    .where(and(eq(memberships.organizationId, organizationId), eq(memberships.userId, userId)))
    .get()
  if (!row) throw notFound()
  return row
}

const lastOwner = () => new Refusal('conflict', 'An organisation needs at least one owner: make another member an owner first.')

/** Owners change roles (the caller's permission is checked by the caller's guard). */
export function changeRole(s: Pick<AccountServices, 'clock' | 'storage'>, actor: Actor, input: { organizationId: string; userId: string; role: Role }): void {
  const { organizationId, userId, role } = input
  transaction(s, (tx) => {
    const row = memberRow(tx, organizationId, userId)
    if (row.role === role) return
    if (row.role === 'owner' && ownerCount(tx, organizationId) <= 1) throw lastOwner()
    tx.update(memberships)
      .set({ role })
      .where(and(eq(memberships.organizationId, organizationId), eq(memberships.userId, userId)))
      .run()
    recordAudit(s, actor, { organizationId, action: 'member.role_changed', target: row.email, detail: `${row.role} -> ${role}` })
  })
}

/**
 * Removes a member (an owner removing someone, or anyone leaving); never the last owner. The
 * keys they made stay active (they are the organisation's); the audit row says how many, and
 * the keys page marks them.
 */
export function removeMember(s: Pick<AccountServices, 'clock' | 'storage'>, actor: Actor, input: { organizationId: string; userId: string }): void {
  const { organizationId, userId } = input
  transaction(s, (tx) => {
    const row = memberRow(tx, organizationId, userId)
    if (row.role === 'owner' && ownerCount(tx, organizationId) <= 1) throw lastOwner()
    tx.delete(memberships)
      .where(and(eq(memberships.organizationId, organizationId), eq(memberships.userId, userId)))
      .run()
    const keys = countActiveKeysMadeBy(tx, organizationId, userId)
    const detail = [actor.userId === userId ? 'left' : '', keys > 0 ? `${keys} active key${keys === 1 ? '' : 's'} they made stay active` : ''].filter(Boolean).join('; ')
    recordAudit(s, actor, { organizationId, action: 'member.removed', target: row.email, detail })
  })
}

/**
 * The operator joins an organisation as owner: the way into one made by `cli orgs create`,
 * which has no members yet. Joining twice changes nothing.
 */
export function joinAsOwner(s: Pick<AccountServices, 'clock' | 'storage'>, actor: Actor & { userId: string }, input: { organizationId: string }): void {
  const { organizationId } = input
  transaction(s, (tx) => {
    if (!tx.select({ id: organizations.id }).from(organizations).where(eq(organizations.id, organizationId)).get()) throw notFound()
    const existing = tx
      .select({ role: memberships.role })
      .from(memberships)
      .where(and(eq(memberships.organizationId, organizationId), eq(memberships.userId, actor.userId)))
      .get()
    if (existing?.role === 'owner') return
    if (existing)
      tx.update(memberships)
        .set({ role: 'owner' })
        .where(and(eq(memberships.organizationId, organizationId), eq(memberships.userId, actor.userId)))
        .run()
    else
      tx.insert(memberships)
        .values({ organizationId, userId: actor.userId, role: 'owner', createdAt: isoTime(s.clock.now()) })
        .run()
    recordAudit(s, actor, { organizationId, action: 'member.joined', target: actor.label, detail: 'as owner, by the operator' })
  })
}
