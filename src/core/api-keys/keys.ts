/**
 * API keys as the organisation's members and the operator manage them. Keys never manage
 * keys (spec, Authentication): these verbs are reachable from the console and the admin
 * CLI, not over /v1. Keys belong to the organisation, not to the member who made them: a
 * CI job's key keeps working when its maker leaves. The keys page names each key's maker and
 * marks a key whose maker is no longer a member, so an owner can rotate it.
 */
import { isoTime } from '../../clock.ts'
import type { AuditEntry } from '../../storage/port.ts'
import type { ApiKeyRow } from '../../storage/rows.ts'
import { auditEntry, type Actor } from '../audit/audit.ts'
import { notFound, Refusal } from '../common/refusals.ts'
import type { AccountServices } from '../common/services.ts'
import { generateApiKey, hashSecret, parseApiKey } from './authenticate.ts'

const MAX_KEY_NAME = 100

function checkKeyName(raw: unknown): string {
  const name = typeof raw === 'string' ? raw.trim() : ''
  if (name.length > MAX_KEY_NAME || /\p{Cc}/u.test(name))
    throw new Refusal('invalid', `A key name has at most ${MAX_KEY_NAME} printable characters.`)
  return name
}

/** A new key's row and audit row, for the operation that writes them (here, and first-run setup). */
export function newApiKey(
  s: Pick<AccountServices, 'clock'>,
  actor: Actor,
  input: { organizationId: string; name?: unknown },
): { key: string; row: ApiKeyRow; audit: AuditEntry } {
  const { organizationId } = input
  const name = checkKeyName(input.name ?? '')
  const { key, publicId, secretSha256 } = generateApiKey()
  const row: ApiKeyRow = {
    publicId,
    organizationId,
    secretSha256,
    name,
    createdAt: isoTime(s.clock.now()),
    lastUsedAt: null,
    revokedAt: null,
    createdBy: actor.userId,
  }
  return {
    key,
    row,
    audit: auditEntry(s, actor, { organizationId, action: 'key.created', target: publicId, detail: name }),
  }
}

/**
 * A new key of the organisation, audited in its log. Returns the full key, which is never
 * stored and cannot be shown again. An unknown organisation is not_found.
 */
export async function createApiKey(
  s: Pick<AccountServices, 'clock' | 'store'>,
  actor: Actor,
  input: { organizationId: string; name?: unknown },
): Promise<{ key: string; publicId: string }> {
  const { key, row, audit } = newApiKey(s, actor, input)
  if ((await s.store.accounts.insertApiKey({ row, audit })) === 'no_organization') throw notFound()
  return { key, publicId: row.publicId }
}

/**
 * The organisation's keys with their makers: `createdBy` is the maker's email, or null when
 * the CLI made the key; `creatorLeft` is true when that user is no longer a member.
 */
export const listOrganizationKeys = (s: Pick<AccountServices, 'store'>, scope: { organizationId: string }) =>
  s.store.accounts.listOrganizationKeys(scope.organizationId)

/**
 * Revokes the key (once) and audits it in its organisation's log, in one transaction. The
 * key's organisation and name never change, so they are read first; the revocation itself is
 * conditional, so of two revocations at once one writes the audit row.
 */
async function revoke(
  s: Pick<AccountServices, 'clock' | 'store'>,
  actor: Actor,
  publicId: string,
  accept: (row: ApiKeyRow) => boolean,
): Promise<void> {
  const row = await s.store.accounts.findApiKey(publicId)
  if (!row || !accept(row)) throw notFound()
  if (row.revokedAt) return
  const audit = auditEntry(s, actor, {
    organizationId: row.organizationId,
    action: 'key.revoked',
    target: row.publicId,
    detail: row.name,
  })
  await s.store.accounts.revokeApiKey({ publicId: row.publicId, revokedAt: isoTime(s.clock.now()), audit })
}

/**
 * A member revokes a key of their organisation; another organisation's key is not found. Revoking twice is harmless.
 */
export async function revokeOrganizationKey(
  s: Pick<AccountServices, 'clock' | 'store'>,
  actor: Actor,
  input: { organizationId: string; publicId: string },
): Promise<void> {
  await revoke(s, actor, input.publicId, (row) => row.organizationId === input.organizationId)
}

/**
 * The operator revokes any organisation's key, named by the full key or its 16-hex public
 * id. not_found when no such key exists, including a full key whose secret does not match
 * (a typo must not revoke another key). Revoking twice is harmless.
 */
export async function revokeKey(
  s: Pick<AccountServices, 'clock' | 'store'>,
  actor: Actor,
  input: { keyOrPublicId: string },
): Promise<void> {
  const parsed = parseApiKey(input.keyOrPublicId)
  const publicId = parsed?.publicId ?? input.keyOrPublicId
  await revoke(s, actor, publicId, (row) => !parsed || hashSecret(parsed.secret) === row.secretSha256)
}
