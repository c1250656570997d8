/**
 * API keys from the console: the same table and format as the CLI's, plus a name and who
 * made it. Keys belong to the organisation, not to the member who made them: a CI job's key
 * keeps working when its maker leaves. The keys page names each key's maker and marks a key
 * whose maker is no longer a member, so an owner can rotate it.
 */
import { and, asc, eq, isNull, sql } from 'drizzle-orm'
import { isoTime } from '../../clock.ts'
import type { DbOrTx } from '../../storage/database.ts'
import { apiKeys, memberships, users } from '../../storage/schema.ts'
import { generateApiKey } from './authenticate.ts'
import type { Services } from '../services.ts'
import { recordAudit, type Actor } from '../audit/audit.ts'
import { ConsoleError, notFound } from '../refusals.ts'

const MAX_KEY_NAME = 100

export function checkKeyName(raw: unknown): string {
  const name = typeof raw === 'string' ? raw.trim() : ''
  if (name.length > MAX_KEY_NAME || /\p{Cc}/u.test(name)) throw new ConsoleError('invalid', `A key name has at most ${MAX_KEY_NAME} printable characters.`)
  return name
}

/** Inserts a key in the caller's transaction; returns the full key, which is never stored. */
export function insertApiKey(s: Pick<Services, 'clock'>, tx: DbOrTx, organizationId: string, name: string, actor: Actor): { key: string; publicId: string } {
  const { key, publicId, secretSha256 } = generateApiKey()
  tx.insert(apiKeys)
    .values({ publicId, organizationId, secretSha256, name, createdAt: isoTime(s.clock.now()), createdBy: actor.userId })
    .run()
  recordAudit(s, tx, actor, { organizationId, action: 'key.created', target: publicId, detail: name })
  return { key, publicId }
}

export const createNamedApiKey = (s: Pick<Services, 'clock' | 'storage'>, organizationId: string, rawName: unknown, actor: Actor) => {
  const name = checkKeyName(rawName)
  return s.storage.write((tx) => insertApiKey(s, tx, organizationId, name, actor))
}

/**
 * The organisation's keys with their makers: `createdBy` is the maker's email, or null when
 * the CLI made the key; `creatorLeft` is true when that user is no longer a member.
 */
export const listOrganizationKeys = (db: DbOrTx, organizationId: string) =>
  db
    .select({
      publicId: apiKeys.publicId,
      name: apiKeys.name,
      createdAt: apiKeys.createdAt,
      lastUsedAt: apiKeys.lastUsedAt,
      revokedAt: apiKeys.revokedAt,
      createdBy: users.email,
      creatorLeft: sql<boolean>`${apiKeys.createdBy} is not null and ${memberships.userId} is null`.mapWith(Boolean),
    })
    .from(apiKeys)
    .leftJoin(users, eq(users.id, apiKeys.createdBy))
    .leftJoin(memberships, and(eq(memberships.organizationId, apiKeys.organizationId), eq(memberships.userId, apiKeys.createdBy)))
    .where(eq(apiKeys.organizationId, organizationId))
    .orderBy(asc(apiKeys.createdAt))
    .all()

/** Active keys of the organisation made by this user (what stays working when they leave). */
export const countActiveKeysMadeBy = (db: DbOrTx, organizationId: string, userId: string): number =>
  db
    .select({ n: sql<number>`count(*)` })
    .from(apiKeys)
    .where(and(eq(apiKeys.organizationId, organizationId), eq(apiKeys.createdBy, userId), isNull(apiKeys.revokedAt)))
    .get()!.n

/** Revokes a key of this organisation; another organisation's key is not found. Revoking twice is harmless. */
export function revokeOrganizationKey(s: Pick<Services, 'clock' | 'storage'>, organizationId: string, publicId: string, actor: Actor): void {
  s.storage.write((tx) => {
    const row = tx
      .select()
      .from(apiKeys)
      .where(and(eq(apiKeys.publicId, publicId), eq(apiKeys.organizationId, organizationId)))
      .get()
    if (!row) throw notFound()
    if (row.revokedAt) return
    tx.update(apiKeys)
      .set({ revokedAt: isoTime(s.clock.now()) })
      .where(eq(apiKeys.publicId, publicId))
      .run()
    recordAudit(s, tx, actor, { organizationId, action: 'key.revoked', target: publicId, detail: row.name })
  })
}
