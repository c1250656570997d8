/**
 * First run. Until a console user exists, a one-time setup token (kept in `settings`, so
 * the server and `cli setup-link` print the same link) lets whoever can read the server's
 * output create the operator, the first organisation and its first key. Setup deletes it.
 */
import { timingSafeEqual } from 'node:crypto'
import { eq } from 'drizzle-orm'
import { settings } from '../../storage/schema.ts'
import type { AccountServices } from '../services.ts'
import { transaction } from '../transaction.ts'
import type { Actor } from '../audit/audit.ts'
import { Refusal, notFound } from '../refusals.ts'
import { createApiKey } from '../api-keys/keys.ts'
import { organizationToCreate, type LimitPreset } from '../organizations/organizations.ts'
import { insertOrganization } from '../../storage/sqlite/store/organizations.ts'
import { newToken, sha256Hex } from '../helpers/tokens.ts'
import { checkNewPassword, countUsers, hashPassword, insertUser, normaliseEmail } from './users.ts'

const SETTING = 'setup_token'

/** The pending setup token, made on first call; null once a user exists. */
export function setupToken(s: Pick<AccountServices, 'storage'>): string | null {
  const { db } = s.storage
  if (countUsers(s) > 0) return null
  const existing = db.select().from(settings).where(eq(settings.name, SETTING)).get()
  if (existing) return existing.value
  const token = newToken()
  db.insert(settings).values({ name: SETTING, value: token }).onConflictDoNothing().run()
  return db.select().from(settings).where(eq(settings.name, SETTING)).get()!.value
}

export const setupUrl = (baseUrl: string, token: string): string => `${baseUrl}/setup?token=${encodeURIComponent(token)}`

/** True when `given` is the pending token (compared in constant time). */
export function isSetupToken(s: Pick<AccountServices, 'storage'>, input: { token: unknown }): boolean {
  const given = input.token
  if (typeof given !== 'string' || countUsers(s) > 0) return false
  const row = s.storage.db.select().from(settings).where(eq(settings.name, SETTING)).get()
  if (!row) return false
  return timingSafeEqual(Buffer.from(sha256Hex(given), 'hex'), Buffer.from(sha256Hex(row.value), 'hex'))
}

export interface SetupInput {
  token: unknown
  email: unknown
  password: unknown
  organization: unknown
  preset: unknown
}

/** The visitor holding the setup link becomes the operator, with the first organisation and its first key, in one transaction. */
export async function completeSetup(s: AccountServices, visitor: { clientAddress: string }, input: SetupInput) {
  if (!isSetupToken(s, input)) throw notFound()
  const email = normaliseEmail(input.email)
  if (!email) throw new Refusal('invalid', 'Enter an email address.')
  const passwordHash = await hashPassword(s, checkNewPassword(input.password))
  const preset: LimitPreset = input.preset === 'local' ? 'local' : 'hosted'
  return transaction(s, (tx) => {
    // Checked again inside the write lock: two submissions racing create one operator.
    if (countUsers(s) > 0) throw notFound()
    tx.delete(settings).where(eq(settings.name, SETTING)).run()
    const user = insertUser(s, tx, { email, passwordHash, isOperator: true })
    const actor: Actor = { userId: user.id, label: email, clientAddress: visitor.clientAddress }
    const org = insertOrganization(tx, { ...organizationToCreate(s, actor, { name: String(input.organization ?? ''), preset }), ownerUserId: user.id })
    const key = createApiKey(s, actor, { organizationId: org.id, name: 'first key' })
    return { user, organization: org, key }
  })
}
