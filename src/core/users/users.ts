/** Console accounts: email + argon2id password (Bun.password). */
import { isoTime } from '../../clock.ts'
import { newId, randomHex } from '../../ids.ts'
import type { UserRow } from '../../storage/rows.ts'
import type { AccountServices } from '../common/services.ts'
import { auditEntry, type Actor } from '../audit/audit.ts'
import { Refusal } from '../common/refusals.ts'
import { passwordGate, verifyPassword } from './password-gate.ts'
import { type AttemptOutcome, credentialOf, type GuessThrottle } from './sign-in-throttle.ts'

export type User = UserRow

export const MIN_PASSWORD_LENGTH = 10
/** argon2 reads the whole input; a bound keeps one sign-in request from costing more than it should. */
export const MAX_PASSWORD_LENGTH = 256
const MAX_EMAIL_LENGTH = 254

/**
 * Hashes at the configured memory cost (Bun's default time cost). The cost is written into
 * the PHC string, so verification reads it from there: after the setting changes, hashes
 * made at the old cost keep working until their owner's next sign-in remakes them.
 */
export const hashPassword = (s: Pick<AccountServices, 'config'>, password: string): Promise<string> =>
  passwordGate.run(() =>
    Bun.password.hash(password, { algorithm: 'argon2id', memoryCost: s.config.consolePasswordMemoryKib }),
  )

/**
 * A hash made before CONSOLE_PASSWORD_MEMORY_KIB changed, remade at the configured cost while
 * the password is at hand (at sign-in). Until then its check takes longer or shorter than the
 * decoy of an unknown account, which would tell an observer that the account exists.
 */
export async function rehashAtConfiguredCost(
  s: Pick<AccountServices, 'config' | 'store'>,
  user: User,
  password: string,
): Promise<User> {
  if (/\$m=(\d+),/.exec(user.passwordHash)?.[1] === String(s.config.consolePasswordMemoryKib)) return user
  let passwordHash: string
  try {
    passwordHash = await hashPassword(s, password)
  } catch (error) {
    // The password gate is full: the sign-in already succeeded, so the remake waits for a later one.
    if (error instanceof Refusal && error.kind === 'throttled') return user
    throw error
  }
  await s.store.accounts.setPasswordHash({ userId: user.id, passwordHash, endSessions: 'none', audit: null })
  return { ...user, passwordHash }
}

/**
 * Lowercased and checked for one '@' with something on both
 * sides, no control characters; null when it is not an address.
 */
export function normaliseEmail(raw: unknown): string | null {
  if (typeof raw !== 'string') return null
  const email = raw.trim().toLowerCase()
  if (email.length > MAX_EMAIL_LENGTH || !/^[^\s@\p{Cc}]+@[^\s@\p{Cc}]+$/u.test(email)) return null
  return email
}

export function checkNewPassword(password: unknown): string {
  if (typeof password !== 'string' || password.length < MIN_PASSWORD_LENGTH || password.length > MAX_PASSWORD_LENGTH) {
    throw new Refusal('invalid', `The password must have ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters.`)
  }
  return password
}

export const countUsers = (s: Pick<AccountServices, 'store'>): Promise<number> => s.store.accounts.countUsers()

export const findUserByEmail = (s: Pick<AccountServices, 'store'>, email: string): Promise<User | undefined> =>
  s.store.accounts.findUserByEmail(email)

export const findUser = (s: Pick<AccountServices, 'store'>, id: string): Promise<User | undefined> =>
  s.store.accounts.findUser(id)

/** Every account, oldest first (the operator's page). */
export const listUsers = (s: Pick<AccountServices, 'store'>) => s.store.accounts.listUsers()

/** A new account's row; the caller hashed the password and checked the email. */
export const newUserRow = (
  s: Pick<AccountServices, 'clock'>,
  input: { email: string; passwordHash: string; isOperator?: boolean },
): User => ({
  id: newId('user'),
  email: input.email,
  passwordHash: input.passwordHash,
  isOperator: input.isOperator ?? false,
  createdAt: isoTime(s.clock.now()),
})

/** A password an operator hands over; 80 random bits, readable aloud in groups. */
const generatePassword = (): string => randomHex(10).match(/.{5}/g)!.join('-')

/**
 * The operator's reset (the service sends no mail, so there is no self-service link): a new
 * generated password, shown once to the operator, and every session of the user ends. The
 * audit row is written in the same transaction, so a crash cannot keep the change and lose
 * its record.
 */
export async function resetPassword(
  s: AccountServices,
  actor: Actor,
  input: { email: string },
): Promise<{ user: User; password: string } | null> {
  const user = await findUserByEmail(s, input.email)
  if (!user) return null
  const password = generatePassword()
  const passwordHash = await hashPassword(s, password)
  const audit = auditEntry(s, actor, { organizationId: null, action: 'user.password_reset', target: user.email })
  // The account may have been deleted while the hash was made: then there is nothing to reset.
  if (!(await s.store.accounts.setPasswordHash({ userId: user.id, passwordHash, endSessions: 'all', audit })))
    return null
  return { user, password }
}

/**
 * Changes one's own password after checking the current one; other sessions end. The check
 * is a password guess like a sign-in: it goes through the sign-in throttle (a wrong current
 * password counts for the account and the address) and the password gate.
 */
export async function changePassword(
  s: Pick<AccountServices, 'config' | 'store'> & { throttle: GuessThrottle },
  user: User,
  input: { current: string; next: unknown; keepSessionSha256: string; clientAddress: string },
): Promise<void> {
  const { throttle } = s
  const waitMs = await throttle.begin(user.email, input.clientAddress, credentialOf(user.passwordHash))
  let outcome: AttemptOutcome = 'not_checked'
  try {
    if (waitMs > 0) await Bun.sleep(waitMs)
    outcome =
      input.current.length <= MAX_PASSWORD_LENGTH && (await verifyPassword(input.current, user.passwordHash))
        ? 'succeeded'
        : 'failed'
  } finally {
    await throttle.finish(user.email, input.clientAddress, outcome)
  }
  if (outcome !== 'succeeded') throw new Refusal('invalid', 'The current password is wrong.')
  const passwordHash = await hashPassword(s, checkNewPassword(input.next))
  await s.store.accounts.setPasswordHash({
    userId: user.id,
    passwordHash,
    endSessions: { keep: input.keepSessionSha256 },
    audit: null,
  })
}
