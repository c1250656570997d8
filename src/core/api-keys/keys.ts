/**
 * API keys as the organisation's members and the operator manage them. Keys never manage
 * keys (spec, Authentication): these verbs are reachable from the console and the admin
 * CLI, not over /v1. Keys belong to the organisation, not to the member who made them: a
 * CI job's key keeps working when its maker leaves. The keys page names each key's maker and
 * marks a key whose maker is no longer a member, so an owner can rotate it.
 */
import { and, asc, eq, isNull, sql } from 'drizzle-orm'
import { isoTime } from '../../clock.ts'
import type { DbOrTx } from '../../storage/database.ts'
import { apiKeys, memberships, organizations, users } from '../../storage/schema.ts'
import { recordAudit, type Actor } from '../audit/audit.ts'
import { notFound, Refusal } from '../refusals.ts'
import type { AccountServices } from '../services.ts'
import { transaction } from '../transaction.ts'
import { generateApiKey, hashSecret, parseApiKey } from './authenticate.ts'

const MAX_KEY_NAME = 100

export function checkKeyName(raw: unknown): string {
  const name = typeof raw === 'string' ? raw.trim() : ''
  if (name.length > MAX_KEY_NAME || /\p{Cc}/u.test(name)) throw new Refusal('invalid', `A key name has at most ${MAX_KEY_NAME} printable characters.`)
  return name
}

/**
 * A new key of the organisation, audited in its log. Returns the full key, which is never
 * stored and cannot be shown again. An unknown organisation is not_found.
 */
export function createApiKey(s: Pick<AccountServices, 'clock' | 'storage'>, actor: Actor, input: { organizationId: string; name?: unknown }): { key: string; publicId: string } {
  const { organizationId } = input
  const name = checkKeyName(input.name ?? '')
  return transaction(s, (tx) => {
    if (!tx.select({ id: organizations.id }).from(organizations).where(eq(organizations.id, organizationId)).get()) throw notFound()
    const { key, publicId, secretSha256 } = generateApiKey()
    tx.insert(apiKeys)
      .values({ publicId, organizationId, secretSha256, name, createdAt: isoTime(s.clock.now()), createdBy: actor.userId })
      .run()
    recordAudit(s, actor, { organizationId, action: 'key.created', target: publicId, detail: name })
    return { key, publicId }
  })
}

/**
 * The organisation's keys with their makers: `createdBy` is the maker's email, or null when
 * the CLI made the key; `creatorLeft` is true when that user is no longer a member.
 */
export const listOrganizationKeys = (s: Pick<AccountServices, 'storage'>, scope: { organizationId: string }) =>
  s.storage.db
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
    .where(eq(apiKeys.organizationId, scope.organizationId))
    .orderBy(asc(apiKeys.createdAt))
    .all()

/** Active keys of the organisation made by this user (what stays working when they leave); for verbs, in their transaction. */
export const countActiveKeysMadeBy = (tx: DbOrTx, organizationId: string, userId: string): number =>
  tx
    .select({ n: sql<number>`count(*)` })
    .from(apiKeys)
    .where(and(eq(apiKeys.organizationId, organizationId), eq(apiKeys.createdBy, userId), isNull(apiKeys.revokedAt)))
    .get()!.n

/** Revokes the key (once) and audits it in its organisation's log, in one transaction. */
function revoke(s: Pick<AccountServices, 'clock' | 'storage'>, actor: Actor, find: (tx: DbOrTx) => typeof apiKeys.$inferSelect | undefined): void {
  transaction(s, (tx) => {
    const row = find(tx)
    if (!row) throw notFound()
    if (row.revokedAt) return
    tx.update(apiKeys)
      .set({ revokedAt: isoTime(s.clock.now()) })
      .where(eq(apiKeys.publicId, row.publicId))
      .run()
    recordAudit(s, actor, { organizationId: row.organizationId, action: 'key.revoked', target: row.publicId, detail: row.name })
  })
}

/** A member revokes a key of their organisation; another organisation's key is not found. Revoking twice is harmless. */
export function revokeOrganizationKey(s: Pick<AccountServices, 'clock' | 'storage'>, actor: Actor, input: { organizationId: string; publicId: string }): void {
  revoke(s, actor, (tx) =>
    tx
      .select()
      .from(apiKeys)
      .where(and(eq(apiKeys.publicId, input.publicId), eq(apiKeys.organizationId, input.organizationId)))
      .get(),
  )
}

/**
 * The operator revokes any organisation's key, named by the full key or its 16-hex public
 * id. not_found when no such key exists, including a full key whose secret does not match
 * (a typo must not revoke another key). Revoking twice is harmless.
 */
export function revokeKey(s: Pick<AccountServices, 'clock' | 'storage'>, actor: Actor, input: { keyOrPublicId: string }): void {
  const parsed = parseApiKey(input.keyOrPublicId)
  const publicId = parsed?.publicId ?? input.keyOrPublicId
  revoke(s, actor, (tx) => {
    const row = tx.select().from(apiKeys).where(eq(apiKeys.publicId, publicId)).get()
    return row && (!parsed || hashSecret(parsed.secret) === row.secretSha256) ? row : undefined
  })
}
