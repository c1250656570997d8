/**
 * The PostgreSQL side of AccountStore (../../port/accounts.ts). Transactions run under READ
 * COMMITTED side by side, on any number of machines; each check-then-write below says what
 * makes it exact there (SQLite gets that from its single writer).
 */
import { and, asc, eq, inArray, isNotNull, isNull, lt, sql } from 'drizzle-orm'
import { limitColumnsOf } from '../../columns.ts'
import type { AccountStore, EndSessions } from '../../port/accounts.ts'
import type { PostgresDbOrTx, PostgresDb } from '../db.ts'
import { apiKeys, memberships, organizations, sessions, settings, users } from '../schema.ts'
import { insertAudit } from './audit.ts'

const SETUP_TOKEN = 'setup_token'
/** The advisory lock that makes first-run setup happen once across machines. */
const SETUP_LOCK = 'pigeonhole.first-run-setup'

const limitColumns = limitColumnsOf(organizations)

async function countAllUsers(db: PostgresDbOrTx): Promise<number> {
  const [row] = await db.select({ n: sql<number>`count(*)::int` }).from(users)
  return row?.n ?? 0
}

async function endSessionsOf(tx: PostgresDbOrTx, userId: string, which: EndSessions): Promise<void> {
  if (which === 'none') return
  if (which === 'all') await tx.delete(sessions).where(eq(sessions.userId, userId))
  else await tx.delete(sessions).where(sql`${sessions.userId} = ${userId} and ${sessions.tokenSha256} <> ${which.keep}`)
}

async function readToken(db: PostgresDbOrTx): Promise<string | null> {
  const [row] = await db.select({ value: settings.value }).from(settings).where(eq(settings.name, SETUP_TOKEN)).limit(1)
  return row?.value ?? null
}

export function postgresAccounts(db: PostgresDb): AccountStore {
  return {
    countUsers: () => countAllUsers(db),

    async findUserByEmail(email) {
      return (await db.select().from(users).where(eq(users.email, email)).limit(1))[0]
    },

    async findUser(id) {
      return (await db.select().from(users).where(eq(users.id, id)).limit(1))[0]
    },

    listUsers: () =>
      db
        .select({ id: users.id, email: users.email, isOperator: users.isOperator, createdAt: users.createdAt })
        .from(users)
        .orderBy(asc(users.createdAt), asc(users.id)),

    setPasswordHash({ userId, passwordHash, endSessions, audit }) {
      return db.transaction(async (tx) => {
        // The update locks the user's row until commit: a concurrent change of the same password waits.
        const changed = await tx
          .update(users)
          .set({ passwordHash })
          .where(eq(users.id, userId))
          .returning({ id: users.id })
        if (changed.length === 0) return false
        await endSessionsOf(tx, userId, endSessions)
        await insertAudit(tx, audit)
        return true
      })
    },

    async pendingSetupToken(candidate) {
      if ((await countAllUsers(db)) > 0) return null
      // The name is the primary key: of two machines inserting at once, one row stays and both read it.
      await db.insert(settings).values({ name: SETUP_TOKEN, value: candidate }).onConflictDoNothing()
      return readToken(db)
    },

    async readSetupToken() {
      const [row] = await db
        .select({ value: settings.value })
        .from(settings)
        .where(and(eq(settings.name, SETUP_TOKEN), sql`not exists (select 1 from ${users})`))
        .limit(1)
      return row?.value ?? null
    },

    completeFirstRunSetup(setup) {
      return db.transaction(async (tx) => {
        // A transaction-scoped advisory lock serialises setups across machines: the second
        // waits, then counts the first one's user (no unique constraint stops two operators
        // with different emails). The conditional delete refuses a token consumed meanwhile.
        await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${SETUP_LOCK}, 0))`)
        if ((await countAllUsers(tx)) > 0) return false
        const deleted = await tx
          .delete(settings)
          .where(and(eq(settings.name, SETUP_TOKEN), eq(settings.value, setup.token)))
          .returning({ name: settings.name })
        if (deleted.length !== 1) return false
        await tx.insert(users).values(setup.user)
        await tx.insert(organizations).values(setup.organization)
        await tx.insert(memberships).values(setup.membership)
        await tx.insert(apiKeys).values(setup.key)
        for (const entry of setup.audit) await insertAudit(tx, entry)
        return true
      })
    },

    async insertSession(row) {
      await db.insert(sessions).values(row)
    },

    async useSession({ tokenSha256, now, renewBefore, renewTo }) {
      const [row] = await db
        .select()
        .from(sessions)
        .innerJoin(users, eq(users.id, sessions.userId))
        .where(eq(sessions.tokenSha256, tokenSha256))
        .limit(1)
      if (!row) return null
      if (Date.parse(row.sessions.expiresAt) <= Date.parse(now)) {
        await db.delete(sessions).where(eq(sessions.tokenSha256, tokenSha256))
        return null
      }
      if (Date.parse(row.sessions.expiresAt) < Date.parse(renewBefore)) {
        // Two requests renewing at once both write a full lifetime from their now: either is right.
        await db.update(sessions).set({ expiresAt: renewTo }).where(eq(sessions.tokenSha256, tokenSha256))
        return { user: row.users, expiresAt: renewTo, renewed: true }
      }
      return { user: row.users, expiresAt: row.sessions.expiresAt, renewed: false }
    },

    async sessionExpiryInOrganization({ tokenSha256, organizationId }) {
      const [row] = await db
        .select({ expiresAt: sessions.expiresAt })
        .from(sessions)
        .innerJoin(
          memberships,
          and(eq(memberships.userId, sessions.userId), eq(memberships.organizationId, organizationId)),
        )
        .where(eq(sessions.tokenSha256, tokenSha256))
        .limit(1)
      return row?.expiresAt
    },

    async deleteSession(tokenSha256) {
      await db.delete(sessions).where(eq(sessions.tokenSha256, tokenSha256))
    },

    deleteSessionsOfUser({ userId, audit }) {
      return db.transaction(async (tx) => {
        const ended = (
          await tx.delete(sessions).where(eq(sessions.userId, userId)).returning({ tokenSha256: sessions.tokenSha256 })
        ).length
        await insertAudit(tx, audit?.(ended) ?? null)
        return ended
      })
    },

    listSessions: (userId) =>
      db
        .select({
          createdAt: sessions.createdAt,
          expiresAt: sessions.expiresAt,
          clientAddress: sessions.clientAddress,
          tokenSha256: sessions.tokenSha256,
        })
        .from(sessions)
        .where(eq(sessions.userId, userId)),

    async deleteExpiredSessions(now) {
      return (
        await db.delete(sessions).where(lt(sessions.expiresAt, now)).returning({ tokenSha256: sessions.tokenSha256 })
      ).length
    },

    insertApiKey({ row, audit }) {
      return db.transaction(async (tx) => {
        // FOR SHARE holds the organisation's row until commit: a deletion of it waits, so the
        // key never outlives a check that found its organisation.
        const [organization] = await tx
          .select({ id: organizations.id })
          .from(organizations)
          .where(eq(organizations.id, row.organizationId))
          .for('share')
        if (!organization) return 'no_organization' as const
        await tx.insert(apiKeys).values(row)
        await insertAudit(tx, audit)
        return 'created' as const
      })
    },

    listOrganizationKeys: (organizationId) =>
      db
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
        .orderBy(asc(apiKeys.createdAt), asc(apiKeys.publicId)),

    async findApiKey(publicId) {
      return (await db.select().from(apiKeys).where(eq(apiKeys.publicId, publicId)).limit(1))[0]
    },

    async revokedAmong(publicIds) {
      if (publicIds.length === 0) return []
      const rows = await db
        .select({ publicId: apiKeys.publicId })
        .from(apiKeys)
        .where(and(inArray(apiKeys.publicId, publicIds), isNotNull(apiKeys.revokedAt)))
      return rows.map((row) => row.publicId)
    },

    revokeApiKey({ publicId, revokedAt, audit }) {
      return db.transaction(async (tx) => {
        // A conditional write: of two revocations at once, the second waits on the row, then
        // finds it revoked and writes nothing, so the audit log records one revocation.
        const revoked = await tx
          .update(apiKeys)
          .set({ revokedAt })
          .where(and(eq(apiKeys.publicId, publicId), isNull(apiKeys.revokedAt)))
          .returning({ publicId: apiKeys.publicId })
        if (revoked.length === 0) return false
        await insertAudit(tx, audit)
        return true
      })
    },

    async keyForAuthentication(publicId) {
      const [row] = await db
        .select({
          organizationId: apiKeys.organizationId,
          secretSha256: apiKeys.secretSha256,
          revokedAt: apiKeys.revokedAt,
          lastUsedAt: apiKeys.lastUsedAt,
          ...limitColumns,
        })
        .from(apiKeys)
        .innerJoin(organizations, eq(organizations.id, apiKeys.organizationId))
        .where(eq(apiKeys.publicId, publicId))
        .limit(1)
      return row
    },

    async markKeyUsed({ publicId, at }) {
      await db.update(apiKeys).set({ lastUsedAt: at }).where(eq(apiKeys.publicId, publicId))
    },
  }
}
