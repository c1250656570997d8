/**
 * The SQLite side of OrganizationStore (../../port/organizations.ts). SQLite has one writer:
 * each write runs in one IMMEDIATE transaction (or joins the one open on the connection), so
 * a check and the write it guards (the last owner, an unused invite, a free email) see the
 * same state with no lock of their own.
 */
import { and, asc, desc, eq, gt, isNull, lt, sql } from 'drizzle-orm'
import { limitColumnsOf } from '../../columns.ts'
import type { MemberRole, OrganizationLimitColumns, OrganizationStore } from '../../port/organizations.ts'
import { preparedPerDatabase } from '../../prepared.ts'
import type { OrganizationRow } from '../../rows.ts'
import { apiKeys, auditEvents, invites, memberships, organizations, users } from '../schema.ts'
import type { Db, DbOrTx, Storage } from '../../types.ts'
import { transaction } from '../transaction.ts'
import { insertAudit } from './audit.ts'

const limitColumns = limitColumnsOf(organizations)

const limitsById = preparedPerDatabase((db) =>
  db
    .select(limitColumns)
    .from(organizations)
    .where(eq(organizations.id, sql.placeholder('id')))
    .prepare(),
)

/**
 * The limit columns by a prepared statement, synchronously: for SQLite's own hot paths that
 * read limits inside a synchronous transaction (the RCPT TO checks).
 */
const sqliteOrganizationLimits = (db: Db, organizationId: string): OrganizationLimitColumns | null =>
  limitsById(db).get({ id: organizationId }) ?? null

/**
 * createOrganization's writes, synchronously in the caller's transaction: for first-run setup,
 * which makes the operator, the organisation and its key in one SQLite transaction.
 */
function insertOrganization(
  tx: DbOrTx,
  { organization, ownerUserId, audit }: Parameters<OrganizationStore['createOrganization']>[0],
): OrganizationRow {
  const row = tx.insert(organizations).values(organization).returning().get()
  if (ownerUserId)
    tx.insert(memberships)
      .values({ organizationId: row.id, userId: ownerUserId, role: 'owner', createdAt: row.createdAt })
      .run()
  insertAudit(tx, audit)
  return row
}

const ownerCount = (tx: DbOrTx, organizationId: string): number =>
  tx
    .select({ n: sql<number>`count(*)` })
    .from(memberships)
    .where(and(eq(memberships.organizationId, organizationId), eq(memberships.role, 'owner')))
    .get()!.n

const memberRow = (tx: DbOrTx, organizationId: string, userId: string) =>
  tx
    .select({ role: memberships.role, email: users.email })
    .from(memberships)
    .innerJoin(users, eq(users.id, memberships.userId))
    .where(and(eq(memberships.organizationId, organizationId), eq(memberships.userId, userId)))
    .get()

const roleOf = (tx: DbOrTx, organizationId: string, userId: string): MemberRole | undefined =>
  tx
    .select({ role: memberships.role })
    .from(memberships)
    .where(and(eq(memberships.organizationId, organizationId), eq(memberships.userId, userId)))
    .get()?.role

const membershipKey = (organizationId: string, userId: string) =>
  and(eq(memberships.organizationId, organizationId), eq(memberships.userId, userId))

export function sqliteOrganizations(storage: Storage): OrganizationStore {
  const { db } = storage
  return {
    async createOrganization(input) {
      return transaction(storage, (tx) => insertOrganization(tx, input))
    },

    async listOrganizations() {
      return db.select().from(organizations).orderBy(asc(organizations.createdAt)).all()
    },

    async findOrganization(organizationId) {
      return db.select().from(organizations).where(eq(organizations.id, organizationId)).get() ?? null
    },

    async organizationLimits(organizationId) {
      return sqliteOrganizationLimits(db, organizationId)
    },

    async setLimits({ organizationId, columns, audit }) {
      return transaction(storage, (tx) => {
        const found =
          Object.keys(columns).length === 0
            ? tx.select({ id: organizations.id }).from(organizations).where(eq(organizations.id, organizationId)).get()
            : tx
                .update(organizations)
                .set(columns)
                .where(eq(organizations.id, organizationId))
                .returning({ id: organizations.id })
                .get()
        if (!found) return false
        insertAudit(tx, audit)
        return true
      })
    },

    async membershipsOf(userId) {
      return db
        .select({ organizationId: organizations.id, name: organizations.name, role: memberships.role })
        .from(memberships)
        .innerJoin(organizations, eq(organizations.id, memberships.organizationId))
        .where(eq(memberships.userId, userId))
        .orderBy(asc(organizations.name))
        .all()
    },

    async membership({ userId, organizationId }) {
      return (
        db
          .select({ organization: organizations, role: memberships.role })
          .from(memberships)
          .innerJoin(organizations, eq(organizations.id, memberships.organizationId))
          .where(membershipKey(organizationId, userId))
          .get() ?? null
      )
    },

    async listMembers(organizationId) {
      return db
        .select({ userId: users.id, email: users.email, role: memberships.role, joinedAt: memberships.createdAt })
        .from(memberships)
        .innerJoin(users, eq(users.id, memberships.userId))
        .where(eq(memberships.organizationId, organizationId))
        .orderBy(asc(memberships.createdAt))
        .all()
    },

    async changeRole({ organizationId, userId, role, audit }) {
      return transaction(storage, (tx) => {
        const member = memberRow(tx, organizationId, userId)
        if (!member) return { refused: 'not_found' } as const
        if (member.role === role) return { outcome: 'unchanged' } as const
        if (member.role === 'owner' && ownerCount(tx, organizationId) <= 1) return { refused: 'last_owner' } as const
        tx.update(memberships).set({ role }).where(membershipKey(organizationId, userId)).run()
        insertAudit(tx, audit(member))
        return { outcome: 'changed' } as const
      })
    },

    async removeMember({ organizationId, userId, audit }) {
      return transaction(storage, (tx) => {
        const member = memberRow(tx, organizationId, userId)
        if (!member) return { refused: 'not_found' } as const
        if (member.role === 'owner' && ownerCount(tx, organizationId) <= 1) return { refused: 'last_owner' } as const
        tx.delete(memberships).where(membershipKey(organizationId, userId)).run()
        const activeKeysMade = tx
          .select({ n: sql<number>`count(*)` })
          .from(apiKeys)
          .where(
            and(eq(apiKeys.organizationId, organizationId), eq(apiKeys.createdBy, userId), isNull(apiKeys.revokedAt)),
          )
          .get()!.n
        insertAudit(tx, audit({ ...member, activeKeysMade }))
        return { removed: true } as const
      })
    },

    async joinAsOwner({ organizationId, userId, now, audit }) {
      return transaction(storage, (tx) => {
        if (!tx.select({ id: organizations.id }).from(organizations).where(eq(organizations.id, organizationId)).get())
          return 'not_found' as const
        const existing = roleOf(tx, organizationId, userId)
        if (existing === 'owner') return 'already_owner' as const
        if (existing) tx.update(memberships).set({ role: 'owner' }).where(membershipKey(organizationId, userId)).run()
        else tx.insert(memberships).values({ organizationId, userId, role: 'owner', createdAt: now }).run()
        insertAudit(tx, audit)
        return existing ? ('promoted' as const) : ('joined' as const)
      })
    },

    async createInvite({ invite, audit }) {
      transaction(storage, (tx) => {
        tx.insert(invites).values(invite).run()
        insertAudit(tx, audit)
      })
    },

    async listOpenInvites({ organizationId, now }) {
      return db
        .select({ id: invites.id, role: invites.role, createdAt: invites.createdAt, expiresAt: invites.expiresAt })
        .from(invites)
        .where(and(eq(invites.organizationId, organizationId), isNull(invites.usedAt), gt(invites.expiresAt, now)))
        .orderBy(desc(invites.createdAt))
        .all()
    },

    async withdrawInvite({ organizationId, inviteId, now, audit }) {
      return transaction(storage, (tx) => {
        const done = tx
          .update(invites)
          .set({ usedAt: now })
          .where(and(eq(invites.id, inviteId), eq(invites.organizationId, organizationId), isNull(invites.usedAt)))
          .returning({ id: invites.id })
          .get()
        if (!done) return false
        insertAudit(tx, audit)
        return true
      })
    },

    async inviteByToken(tokenSha256) {
      return inviteByToken(db, tokenSha256) ?? null
    },

    async acceptInvite({ tokenSha256, userId, now, newUser, audit }) {
      // Every check comes before the first write, so a refusal writes nothing even when this
      // joins a transaction that is already open.
      return transaction(storage, (tx) => {
        if (newUser && tx.select({ id: users.id }).from(users).where(eq(users.email, newUser.email)).get())
          return { refused: 'email_taken' } as const
        const invite = inviteByToken(tx, tokenSha256)
        if (!invite || invite.usedAt || Date.parse(invite.expiresAt) <= Date.parse(now))
          return { refused: 'invite_not_found' } as const
        if (!newUser && roleOf(tx, invite.organizationId, userId)) return { refused: 'already_member' } as const
        if (newUser) tx.insert(users).values(newUser).run()
        tx.update(invites).set({ usedAt: now }).where(eq(invites.id, invite.id)).run()
        tx.insert(memberships)
          .values({ organizationId: invite.organizationId, userId, role: invite.role, createdAt: now })
          .run()
        insertAudit(tx, audit(invite))
        return { accepted: { organizationId: invite.organizationId, role: invite.role } }
      })
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
        .all()
    },
  }
}

const inviteByToken = (tx: DbOrTx, tokenSha256: string) =>
  tx
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
    .get()
