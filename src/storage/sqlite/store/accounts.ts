/**
 * The SQLite side of AccountStore (../../port/accounts.ts). Writes run in `transaction`
 * (one IMMEDIATE transaction, joined when one is open); SQLite's single writer makes each
 * check-then-write exact. The statements run on every API request or live-stream event are
 * prepared once per database.
 */
import { and, asc, eq, inArray, isNotNull, isNull, lt, sql } from 'drizzle-orm'
import { limitColumnsOf } from '../../columns.ts'
import type { AccountStore, EndSessions, KeyForAuthentication } from '../../port/accounts.ts'
import { preparedPerDatabase } from '../../prepared.ts'
import { apiKeys, memberships, organizations, sessions, settings, users } from '../schema.ts'
import type { DbOrTx, Storage } from '../../types.ts'
import { transaction } from '../transaction.ts'
import { insertAudit } from './audit.ts'

const SETUP_TOKEN = 'setup_token'

const limitColumns = limitColumnsOf(organizations)

const keyByPublicId = preparedPerDatabase((db) =>
  db
    .select({
      organizationId: apiKeys.organizationId,
      secretSha256: apiKeys.secretSha256,
      revokedAt: apiKeys.revokedAt,
      lastUsedAt: apiKeys.lastUsedAt,
      ...limitColumns,
    })
    .from(apiKeys)
    .innerJoin(organizations, eq(organizations.id, apiKeys.organizationId))
    .where(eq(apiKeys.publicId, sql.placeholder('publicId')))
    .prepare(),
)

// A live stream asks this before every event it sends.
const sessionMembership = preparedPerDatabase((db) =>
  db
    .select({ expiresAt: sessions.expiresAt })
    .from(sessions)
    .innerJoin(
      memberships,
      and(eq(memberships.userId, sessions.userId), eq(memberships.organizationId, sql.placeholder('organizationId'))),
    )
    .where(eq(sessions.tokenSha256, sql.placeholder('tokenSha256')))
    .prepare(),
)

function endSessionsOf(tx: DbOrTx, userId: string, which: EndSessions): void {
  if (which === 'none') return
  if (which === 'all') tx.delete(sessions).where(eq(sessions.userId, userId)).run()
  else tx.delete(sessions).where(sql`${sessions.userId} = ${userId} and ${sessions.tokenSha256} <> ${which.keep}`).run()
}

const countAllUsers = (db: DbOrTx): number => db.select({ n: sql<number>`count(*)` }).from(users).get()!.n

export function sqliteAccounts(storage: Storage): AccountStore {
  const { db } = storage
  return {
    async countUsers() {
      return countAllUsers(db)
    },

    async findUserByEmail(email) {
      return db.select().from(users).where(eq(users.email, email)).get()
    },

    async findUser(id) {
      return db.select().from(users).where(eq(users.id, id)).get()
    },

    async listUsers() {
      return db
        .select({ id: users.id, email: users.email, isOperator: users.isOperator, createdAt: users.createdAt })
        .from(users)
        .orderBy(asc(users.createdAt), asc(users.id))
        .all()
    },

    async setPasswordHash({ userId, passwordHash, endSessions, audit }) {
      return transaction(storage, (tx) => {
        const changed =
          tx.update(users).set({ passwordHash }).where(eq(users.id, userId)).returning({ id: users.id }).all().length >
          0
        if (!changed) return false
        endSessionsOf(tx, userId, endSessions)
        insertAudit(tx, audit)
        return true
      })
    },

    async pendingSetupToken(candidate) {
      if (countAllUsers(db) > 0) return null
      db.insert(settings).values({ name: SETUP_TOKEN, value: candidate }).onConflictDoNothing().run()
      return db.select().from(settings).where(eq(settings.name, SETUP_TOKEN)).get()?.value ?? null
    },

    async readSetupToken() {
      if (countAllUsers(db) > 0) return null
      return db.select().from(settings).where(eq(settings.name, SETUP_TOKEN)).get()?.value ?? null
    },

    async completeFirstRunSetup(setup) {
      return transaction(storage, (tx) => {
        // Checked inside the write lock: of two submissions, the second sees the first's user.
        if (countAllUsers(tx) > 0) return false
        const deleted = tx
          .delete(settings)
          .where(and(eq(settings.name, SETUP_TOKEN), eq(settings.value, setup.token)))
          .returning({ name: settings.name })
          .all()
        if (deleted.length !== 1) return false
        tx.insert(users).values(setup.user).run()
        tx.insert(organizations).values(setup.organization).run()
        tx.insert(memberships).values(setup.membership).run()
        tx.insert(apiKeys).values(setup.key).run()
        for (const entry of setup.audit) insertAudit(tx, entry)
        return true
      })
    },

    async insertSession(row) {
      transaction(storage, (tx) => tx.insert(sessions).values(row).run())
    },

    async useSession({ tokenSha256, now, renewBefore, renewTo }) {
      const row = db
        .select()
        .from(sessions)
        .innerJoin(users, eq(users.id, sessions.userId))
        .where(eq(sessions.tokenSha256, tokenSha256))
        .get()
      if (!row) return null
      // Compared as instants: the stored strings are RFC 3339 but need not share one spelling.
      if (Date.parse(row.sessions.expiresAt) <= Date.parse(now)) {
        db.delete(sessions).where(eq(sessions.tokenSha256, tokenSha256)).run()
        return null
      }
      if (Date.parse(row.sessions.expiresAt) < Date.parse(renewBefore)) {
        db.update(sessions).set({ expiresAt: renewTo }).where(eq(sessions.tokenSha256, tokenSha256)).run()
        return { user: row.users, expiresAt: renewTo, renewed: true }
      }
      return { user: row.users, expiresAt: row.sessions.expiresAt, renewed: false }
    },

    async sessionExpiryInOrganization(input) {
      return sessionMembership(db).get(input)?.expiresAt
    },

    async deleteSession(tokenSha256) {
      transaction(storage, (tx) => tx.delete(sessions).where(eq(sessions.tokenSha256, tokenSha256)).run())
    },

    async deleteSessionsOfUser({ userId, audit }) {
      return transaction(storage, (tx) => {
        const ended = tx
          .delete(sessions)
          .where(eq(sessions.userId, userId))
          .returning({ tokenSha256: sessions.tokenSha256 })
          .all().length
        insertAudit(tx, audit?.(ended) ?? null)
        return ended
      })
    },

    async listSessions(userId) {
      return db
        .select({
          createdAt: sessions.createdAt,
          expiresAt: sessions.expiresAt,
          clientAddress: sessions.clientAddress,
          tokenSha256: sessions.tokenSha256,
        })
        .from(sessions)
        .where(eq(sessions.userId, userId))
        .all()
    },

    async deleteExpiredSessions(now) {
      return transaction(
        storage,
        (tx) =>
          tx.delete(sessions).where(lt(sessions.expiresAt, now)).returning({ tokenSha256: sessions.tokenSha256 }).all()
            .length,
      )
    },

    async insertApiKey({ row, audit }) {
      return transaction(storage, (tx) => {
        if (
          !tx.select({ id: organizations.id }).from(organizations).where(eq(organizations.id, row.organizationId)).get()
        )
          return 'no_organization' as const
        tx.insert(apiKeys).values(row).run()
        insertAudit(tx, audit)
        return 'created' as const
      })
    },

    async listOrganizationKeys(organizationId) {
      return db
        .select({
          publicId: apiKeys.publicId,
          name: apiKeys.name,
          createdAt: apiKeys.createdAt,
          lastUsedAt: apiKeys.lastUsedAt,
          revokedAt: apiKeys.revokedAt,
          createdBy: users.email,
          creatorLeft: sql<boolean>`${apiKeys.createdBy} is not null and ${memberships.userId} is null`.mapWith(
            Boolean,
          ),
        })
        .from(apiKeys)
        .leftJoin(users, eq(users.id, apiKeys.createdBy))
        .leftJoin(
          memberships,
          and(eq(memberships.organizationId, apiKeys.organizationId), eq(memberships.userId, apiKeys.createdBy)),
        )
        .where(eq(apiKeys.organizationId, organizationId))
        .orderBy(asc(apiKeys.createdAt), asc(apiKeys.publicId))
        .all()
    },

    async findApiKey(publicId) {
      return db.select().from(apiKeys).where(eq(apiKeys.publicId, publicId)).get()
    },

    async revokedAmong(publicIds) {
      if (publicIds.length === 0) return []
      const rows = db
        .select({ publicId: apiKeys.publicId })
        .from(apiKeys)
        .where(and(inArray(apiKeys.publicId, publicIds), isNotNull(apiKeys.revokedAt)))
        .all()
      return rows.map((row) => row.publicId)
    },

    async revokeApiKey({ publicId, revokedAt, audit }) {
      return transaction(storage, (tx) => {
        const revoked = tx
          .update(apiKeys)
          .set({ revokedAt })
          .where(and(eq(apiKeys.publicId, publicId), isNull(apiKeys.revokedAt)))
          .returning({ publicId: apiKeys.publicId })
          .all()
        if (revoked.length === 0) return false
        insertAudit(tx, audit)
        return true
      })
    },

    async keyForAuthentication(publicId): Promise<KeyForAuthentication | undefined> {
      return keyByPublicId(db).get({ publicId })
    },

    async markKeyUsed({ publicId, at }) {
      db.update(apiKeys).set({ lastUsedAt: at }).where(eq(apiKeys.publicId, publicId)).run()
    },
  }
}
