/**
 * Operator actions behind the admin CLI: organisations and API keys. Not reachable over
 * HTTP; keys never manage keys (spec, Authentication).
 */
import { asc, eq } from 'drizzle-orm'
import { isoTime, type Clock } from '../clock.ts'
import { newId } from '../ids.ts'
import type { Db } from '../storage/database.ts'
import { apiKeys, organizations } from '../storage/schema.ts'
import { hashSecret, parseApiKey } from './api-keys/authenticate.ts'
import { CLI_ACTOR, recordAudit } from './audit/audit.ts'
import { insertApiKey } from './api-keys/keys.ts'

export function createOrganization(db: Db, clock: Clock, name: string) {
  return db
    .insert(organizations)
    .values({ id: newId('org'), name, createdAt: isoTime(clock.now()) })
    .returning()
    .get()
}

export const listOrganizations = (db: Db) => db.select().from(organizations).orderBy(asc(organizations.createdAt)).all()

/** Returns the full key; it is not stored and cannot be shown again. */
export function createApiKey(db: Db, clock: Clock, organizationId: string): { key: string; publicId: string } | null {
  const org = db.select().from(organizations).where(eq(organizations.id, organizationId)).get()
  if (!org) return null
  // The same insert as the console's, so the key is in the organisation's audit log too.
  return db.transaction((tx) => insertApiKey({ clock }, tx, organizationId, '', CLI_ACTOR), { behavior: 'immediate' })
}

export const listApiKeys = (db: Db, organizationId: string) =>
  db
    .select({ publicId: apiKeys.publicId, createdAt: apiKeys.createdAt, lastUsedAt: apiKeys.lastUsedAt, revokedAt: apiKeys.revokedAt })
    .from(apiKeys)
    .where(eq(apiKeys.organizationId, organizationId))
    .orderBy(asc(apiKeys.createdAt))
    .all()

/**
 * Accepts the full key or its 16-hex public id. Returns false when no such key exists,
 * including a full key whose secret does not match (a typo must not revoke another key).
 */
export function revokeApiKey(db: Db, clock: Clock, keyOrPublicId: string): boolean {
  const parsed = parseApiKey(keyOrPublicId)
  const publicId = parsed?.publicId ?? keyOrPublicId
  const row = db.select().from(apiKeys).where(eq(apiKeys.publicId, publicId)).get()
  if (!row) return false
  if (parsed && hashSecret(parsed.secret) !== row.secretSha256) return false
  if (!row.revokedAt) {
    db.transaction(
      (tx) => {
        tx.update(apiKeys)
          .set({ revokedAt: isoTime(clock.now()) })
          .where(eq(apiKeys.publicId, publicId))
          .run()
        recordAudit({ clock }, tx, CLI_ACTOR, { organizationId: row.organizationId, action: 'key.revoked', target: publicId, detail: row.name })
      },
      { behavior: 'immediate' },
    )
  }
  return true
}
