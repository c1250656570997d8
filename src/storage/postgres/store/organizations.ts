/**
 * The PostgreSQL side of OrganizationStore (../../port/organizations.ts). Machines write side
 * by side under READ COMMITTED, so each check that guards a write is made exact here:
 * - membership changes of one organisation (role changes, removals, the operator joining)
 *   first lock the organisation's row (FOR NO KEY UPDATE, which leaves the foreign-key
 *   checks of other tables' inserts alone), so two owners demoting each other at once run
 *   one after the other and the second sees the first's change: never no owner;
 * - an invite is spent by a conditional UPDATE (still unused, not expired): a second accept
 *   of the same invite waits for the first's row lock, then finds it used;
 * - a membership and an account's email are unique by constraint (ON CONFLICT DO NOTHING),
 *   whatever else races.
 * A refusal found after a write throws `Refused` inside the transaction, which rolls it back.
 */
import { and, asc, desc, eq, gt, isNull, lt, sql } from 'drizzle-orm'
import { limitColumnsOf } from '../../columns.ts'
import type { MemberRole, OrganizationStore } from '../../port/organizations.ts'
import type { PostgresDb, PostgresTx } from '../db.ts'
import { apiKeys, auditEvents, invites, memberships, organizations, users } from '../schema.ts'
import { transaction } from '../transaction.ts'
import { insertAudit } from './audit.ts'

const limitColumns = limitColumnsOf(organizations)

const membershipKey = (organizationId: string, userId: string) =>
  and(eq(memberships.organizationId, organizationId), eq(memberships.userId, userId))

/** Serialises membership changes of one organisation across machines; false when it does not exist. */
async function lockOrganization(tx: PostgresTx, organizationId: string): Promise<boolean> {
  const rows = await tx
    .select({ id: organizations.id })
    .from(organizations)
    .where(eq(organizations.id, organizationId))
    .for('no key update')
  return rows.length > 0
}

async function memberRow(tx: PostgresTx, organizationId: string, userId: string) {
  const [row] = await tx
    .select({ role: memberships.role, email: users.email })
    .from(memberships)
    .innerJoin(users, eq(users.id, memberships.userId))
    .where(membershipKey(organizationId, userId))
    .limit(1)
  return row
}

async function ownerCount(tx: PostgresTx, organizationId: string): Promise<number> {
  const [row] = await tx
    .select({ n: sql<number>`count(*)::int` })
    .from(memberships)
    .where(and(eq(memberships.organizationId, organizationId), eq(memberships.role, 'owner')))
  return row?.n ?? 0
}

export function postgresOrganizations(db: PostgresDb): OrganizationStore {
  return {
    async createOrganization({ organization, ownerUserId, audit }) {
      return db.transaction(async (tx) => {
        const [row] = await tx.insert(organizations).values(organization).returning()
        if (ownerUserId)
          await tx
            .insert(memberships)
            .values({ organizationId: row!.id, userId: ownerUserId, role: 'owner', createdAt: row!.createdAt })
        await insertAudit(tx, audit)
        return row!
      })
    },

    async listOrganizations() {
      return db.select().from(organizations).orderBy(asc(organizations.createdAt))
    },

    async findOrganization(organizationId) {
      const [row] = await db.select().from(organizations).where(eq(organizations.id, organizationId)).limit(1)
      return row ?? null
    },

    async organizationLimits(organizationId) {
      const [row] = await db
        .select(limitColumns)
        .from(organizations)
        .where(eq(organizations.id, organizationId))
        .limit(1)
      return row ?? null
    },

    async setLimits({ organizationId, columns, audit }) {
      return db.transaction(async (tx) => {
        const found =
          Object.keys(columns).length === 0
            ? await tx
                .select({ id: organizations.id })
                .from(organizations)
                .where(eq(organizations.id, organizationId))
                .limit(1)
            : await tx
                .update(organizations)
                .set(columns)
                .where(eq(organizations.id, organizationId))
                .returning({ id: organizations.id })
        if (found.length === 0) return false
        await insertAudit(tx, audit)
        return true
      })
    },

    async membershipsOf(userId) {
      return (
        db
          .select({ organizationId: organizations.id, name: organizations.name, role: memberships.role })
          .from(memberships)
          .innerJoin(organizations, eq(organizations.id, memberships.organizationId))
          .where(eq(memberships.userId, userId))
          // Byte order, as SQLite's BINARY collation sorts, whatever the database's locale.
          .orderBy(sql`${organizations.name} collate "C"`)
      )
    },

    async membership({ userId, organizationId }) {
      const [row] = await db
        .select({ organization: organizations, role: memberships.role })
        .from(memberships)
        .innerJoin(organizations, eq(organizations.id, memberships.organizationId))
        .where(membershipKey(organizationId, userId))
        .limit(1)
      return row ?? null
    },

    async listMembers(organizationId) {
      return db
        .select({ userId: users.id, email: users.email, role: memberships.role, joinedAt: memberships.createdAt })
        .from(memberships)
        .innerJoin(users, eq(users.id, memberships.userId))
        .where(eq(memberships.organizationId, organizationId))
        .orderBy(asc(memberships.createdAt))
    },

    async changeRole({ organizationId, userId, role, audit }) {
      return db.transaction(async (tx) => {
        if (!(await lockOrganization(tx, organizationId))) return { refused: 'not_found' } as const
        const member = await memberRow(tx, organizationId, userId)
        if (!member) return { refused: 'not_found' } as const
        if (member.role === role) return { outcome: 'unchanged' } as const
        if (member.role === 'owner' && (await ownerCount(tx, organizationId)) <= 1)
          return { refused: 'last_owner' } as const
        await tx.update(memberships).set({ role }).where(membershipKey(organizationId, userId))
        await insertAudit(tx, audit(member))
        return { outcome: 'changed' } as const
      })
    },

    async removeMember({ organizationId, userId, audit }) {
      return db.transaction(async (tx) => {
        if (!(await lockOrganization(tx, organizationId))) return { refused: 'not_found' } as const
        const member = await memberRow(tx, organizationId, userId)
        if (!member) return { refused: 'not_found' } as const
        if (member.role === 'owner' && (await ownerCount(tx, organizationId)) <= 1)
          return { refused: 'last_owner' } as const
        await tx.delete(memberships).where(membershipKey(organizationId, userId))
        const [keys] = await tx
          .select({ n: sql<number>`count(*)::int` })
          .from(apiKeys)
          .where(
            and(eq(apiKeys.organizationId, organizationId), eq(apiKeys.createdBy, userId), isNull(apiKeys.revokedAt)),
          )
        await insertAudit(tx, audit({ ...member, activeKeysMade: keys?.n ?? 0 }))
        return { removed: true } as const
      })
    },

    async joinAsOwner({ organizationId, userId, now, audit }) {
      return db.transaction(async (tx) => {
        if (!(await lockOrganization(tx, organizationId))) return 'not_found' as const
        const [existing] = await tx
          .select({ role: memberships.role })
          .from(memberships)
          .where(membershipKey(organizationId, userId))
          .limit(1)
        if (existing?.role === 'owner') return 'already_owner' as const
        if (existing) await tx.update(memberships).set({ role: 'owner' }).where(membershipKey(organizationId, userId))
        else await tx.insert(memberships).values({ organizationId, userId, role: 'owner', createdAt: now })
        await insertAudit(tx, audit)
        return existing ? ('promoted' as const) : ('joined' as const)
      })
    },

    async createInvite({ invite, audit }) {
      await db.transaction(async (tx) => {
        await tx.insert(invites).values(invite)
        await insertAudit(tx, audit)
      })
    },

    async listOpenInvites({ organizationId, now }) {
      return db
        .select({ id: invites.id, role: invites.role, createdAt: invites.createdAt, expiresAt: invites.expiresAt })
        .from(invites)
        .where(and(eq(invites.organizationId, organizationId), isNull(invites.usedAt), gt(invites.expiresAt, now)))
        .orderBy(desc(invites.createdAt))
    },

    async withdrawInvite({ organizationId, inviteId, now, audit }) {
      return db.transaction(async (tx) => {
        // Conditional: of two withdrawals (or a withdrawal and an accept) at once, one spends it.
        const done = await tx
          .update(invites)
          .set({ usedAt: now })
          .where(and(eq(invites.id, inviteId), eq(invites.organizationId, organizationId), isNull(invites.usedAt)))
          .returning({ id: invites.id })
        if (done.length === 0) return false
        await insertAudit(tx, audit)
        return true
      })
    },

    async inviteByToken(tokenSha256) {
      const [row] = await db
        .select({
          id: invites.id,
          organizationId: invites.organizationId,
          organizationName: organizations.name,
          role: invites.role,
          expiresAt: invites.expiresAt,
          usedAt: invites.usedAt,
        })
        .from(invites)
        .innerJoin(organizations, eq(organizations.id, invites.organizationId))
        .where(eq(invites.tokenSha256, tokenSha256))
        .limit(1)
      return row ?? null
    },

    async acceptInvite({ tokenSha256, userId, now, newUser, audit }) {
      type Refusal = { refused: 'invite_not_found' | 'already_member' | 'email_taken' }
      return transaction<{ accepted: { organizationId: string; role: MemberRole } }, Refusal>(
        db,
        async (tx, rollBackWith) => {
          if (newUser) {
            // The email's unique constraint decides between two sign-ups with one address.
            const inserted = await tx
              .insert(users)
              .values(newUser)
              .onConflictDoNothing({ target: users.email })
              .returning({ id: users.id })
            if (inserted.length === 0) return rollBackWith({ refused: 'email_taken' })
          }
          // Spends the invite only if it is still unused and unexpired; a concurrent accept
          // holding its row makes this wait, then match nothing.
          const [invite] = await tx
            .update(invites)
            .set({ usedAt: now })
            .where(and(eq(invites.tokenSha256, tokenSha256), isNull(invites.usedAt), gt(invites.expiresAt, now)))
            .returning({ id: invites.id, organizationId: invites.organizationId, role: invites.role })
          if (!invite) return rollBackWith({ refused: 'invite_not_found' })
          const joined = await tx
            .insert(memberships)
            .values({ organizationId: invite.organizationId, userId, role: invite.role, createdAt: now })
            .onConflictDoNothing()
            .returning({ userId: memberships.userId })
          if (joined.length === 0) return rollBackWith({ refused: 'already_member' })
          await insertAudit(tx, audit(invite))
          return { accepted: { organizationId: invite.organizationId, role: invite.role } }
        },
      )
    },

    async listAudit({ organizationId, before, limit }) {
      const scope =
        organizationId === null ? isNull(auditEvents.organizationId) : eq(auditEvents.organizationId, organizationId)
      return db
        .select()
        .from(auditEvents)
        .where(before ? and(scope, lt(auditEvents.id, before)) : scope)
        .orderBy(desc(auditEvents.id))
        .limit(limit)
    },
  }
}
