/**
 * First run. Until a console user exists, a one-time setup token (kept in `settings`, so
 * the server and `cli setup-link` print the same link) lets whoever can read the server's
 * output create the operator, the first organisation and its first key. Setup deletes it.
 */
import { timingSafeEqual } from 'node:crypto'
import { eq } from 'drizzle-orm'
import type { Db } from '../../storage/database.ts'
import { settings } from '../../storage/schema.ts'
import type { Services } from '../services.ts'
import type { Actor } from '../audit/audit.ts'
import { ConsoleError, notFound } from '../refusals.ts'
import { insertApiKey } from '../api-keys/keys.ts'
import { createOrganization, type LimitPreset } from '../organizations/organizations.ts'
import { newToken, sha256Hex } from '../shared/tokens.ts'
import { checkNewPassword, countUsers, hashPassword, insertUser, normaliseEmail } from './users.ts'

const SETTING = 'setup_token'

/** The pending setup token, made on first call; null once a user exists. */
export function setupToken(db: Db): string | null {
  if (countUsers(db) > 0) return null
  const existing = db.select().from(settings).where(eq(settings.name, SETTING)).get()
  if (existing) return existing.value
  const token = newToken()
  db.insert(settings).values({ name: SETTING, value: token }).onConflictDoNothing().run()
  return db.select().from(settings).where(eq(settings.name, SETTING)).get()!.value
}

export const setupUrl = (baseUrl: string, token: string): string => `${baseUrl}/setup?token=${encodeURIComponent(token)}`

/** True when `given` is the pending token (compared in constant time). */
export function isSetupToken(db: Db, given: unknown): boolean {
  if (typeof given !== 'string' || countUsers(db) > 0) return false
  const row = db.select().from(settings).where(eq(settings.name, SETTING)).get()
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

export async function completeSetup(s: Pick<Services, 'clock' | 'config' | 'storage'>, input: SetupInput, clientAddress: string) {
  if (!isSetupToken(s.storage.db, input.token)) throw notFound()
  const email = normaliseEmail(input.email)
  if (!email) throw new ConsoleError('invalid', 'Enter an email address.')
  const passwordHash = await hashPassword(s, checkNewPassword(input.password))
  const preset: LimitPreset = input.preset === 'local' ? 'local' : 'hosted'
  return s.storage.write((tx) => {
    // Checked again inside the write lock: two submissions racing create one operator.
    if (countUsers(tx) > 0) throw notFound()
    tx.delete(settings).where(eq(settings.name, SETTING)).run()
    const user = insertUser(s, tx, { email, passwordHash, isOperator: true })
    const actor: Actor = { userId: user.id, label: email, clientAddress }
    const org = createOrganization(s, tx, { name: String(input.organization ?? ''), preset, owner: user.id }, actor)
    const key = insertApiKey(s, tx, org.id, 'first key', actor)
    return { user, organization: org, key }
  })
}
