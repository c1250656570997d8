/** Sign-in: throttled, constant work whether or not the account exists. */
import type { Services } from '../services.ts'
import { ConsoleError } from './errors.ts'
import type { SignInThrottle } from './sign-in-throttle.ts'
import { findUserByEmail, hashPassword, MAX_PASSWORD_LENGTH, normaliseEmail, type User } from './users.ts'

// Verified against when the account does not exist, so the answer takes as long either way.
let decoyHash: Promise<string> | undefined

const wrongCredentials = () => new ConsoleError('unauthenticated', 'Wrong email or password.')

export async function signIn(s: Pick<Services, 'storage'>, throttle: SignInThrottle, input: { email: unknown; password: unknown }, clientAddress: string): Promise<User> {
  const email = normaliseEmail(input.email)
  const password = typeof input.password === 'string' ? input.password : ''
  if (!email || password === '' || password.length > MAX_PASSWORD_LENGTH) throw wrongCredentials()
  throttle.check(email, clientAddress)
  const user = findUserByEmail(s.storage.db, email)
  decoyHash ??= hashPassword('decoy password, never matches')
  const matches = await Bun.password.verify(password, user?.passwordHash ?? (await decoyHash))
  if (!user || !matches) {
    throttle.recordFailure(email, clientAddress)
    throw wrongCredentials()
  }
  throttle.recordSuccess(email)
  return user
}
