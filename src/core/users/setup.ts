/**
 * First run. Until a console user exists, a one-time setup token (kept in `settings`, so
 * the server and `cli setup-link` print the same link) lets whoever can read the server's
 * output create the operator, the first organisation and its first key. Setup deletes it.
 */
import { timingSafeEqual } from 'node:crypto'
import { isoTime } from '../../clock.ts'
import type { AccountServices } from '../common/services.ts'
import type { Actor } from '../audit/audit.ts'
import { Refusal, notFound } from '../common/refusals.ts'
import { newApiKey } from '../api-keys/keys.ts'
import { checkOrganizationName, organizationToCreate, type LimitPreset } from '../organizations/organizations.ts'
import { newToken, sha256Hex } from '../common/tokens.ts'
import { checkNewPassword, hashPassword, newUserRow, normaliseEmail } from './users.ts'

/** The pending setup token, made on first call; null once a user exists. */
export const setupToken = (s: Pick<AccountServices, 'store'>): Promise<string | null> =>
  s.store.accounts.pendingSetupToken(newToken())

export const setupUrl = (baseUrl: string, token: string): string =>
  `${baseUrl}/setup?token=${encodeURIComponent(token)}`

/** True when `given` is the pending token (compared in constant time). */
export async function isSetupToken(s: Pick<AccountServices, 'store'>, input: { token: unknown }): Promise<boolean> {
  const given = input.token
  if (typeof given !== 'string') return false
  const pending = await s.store.accounts.readSetupToken()
  if (pending === null) return false
  return timingSafeEqual(Buffer.from(sha256Hex(given), 'hex'), Buffer.from(sha256Hex(pending), 'hex'))
}

export interface SetupInput {
  token: unknown
  email: unknown
  password: unknown
  organization: unknown
  preset: unknown
}

/**
 * The visitor holding the setup link becomes the operator, with the first organisation and
 * its first key, in one transaction. Of two submissions at once (even on two machines), one
 * makes the operator and the other is not_found, as is a token already used.
 */
export async function completeSetup(s: AccountServices, visitor: { clientAddress: string }, input: SetupInput) {
  if (!(await isSetupToken(s, input))) throw notFound()
  const token = input.token as string
  const email = normaliseEmail(input.email)
  if (!email) throw new Refusal('invalid', 'Enter an email address.')
  const name = checkOrganizationName(String(input.organization ?? ''))
  const passwordHash = await hashPassword(s, checkNewPassword(input.password))
  const preset: LimitPreset = input.preset === 'local' ? 'local' : 'hosted'
  const user = newUserRow(s, { email, passwordHash, isOperator: true })
  const actor: Actor = { userId: user.id, label: email, clientAddress: visitor.clientAddress }
  const now = isoTime(s.clock.now())
  const { organization, audit: organizationAudit } = organizationToCreate(s, actor, { name, preset })
  const key = newApiKey(s, actor, { organizationId: organization.id, name: 'first key' })
  const done = await s.store.accounts.completeFirstRunSetup({
    token,
    user,
    organization,
    membership: { organizationId: organization.id, userId: user.id, role: 'owner', createdAt: now },
    key: key.row,
    audit: [organizationAudit, key.audit],
  })
  if (!done) throw notFound()
  return { user, organization, key: { key: key.key, publicId: key.row.publicId } }
}
