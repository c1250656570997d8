/** Sign-in: throttled, through the password gate, constant work whether or not the account exists. */
import type { AccountServices } from '../common/services.ts'
import { Refusal } from '../common/refusals.ts'
import { verifyPassword } from './password-gate.ts'
import { type AttemptOutcome, credentialOf, type GuessThrottle } from './sign-in-throttle.ts'
import {
  findUserByEmail,
  hashPassword,
  MAX_PASSWORD_LENGTH,
  normaliseEmail,
  rehashAtConfiguredCost,
  type User,
} from './users.ts'

// Verified against when the account does not exist, so the answer takes as long either way.
// Made at the configured cost, like the passwords set under it: one per cost in the process.
const decoyHashes = new Map<number, Promise<string>>()

function decoyHash(s: Pick<AccountServices, 'config'>): Promise<string> {
  const cost = s.config.consolePasswordMemoryKib
  let decoy = decoyHashes.get(cost)
  if (!decoy) {
    decoy = hashPassword(s, 'decoy password, never matches')
    decoy.catch(() => decoyHashes.delete(cost)) // a failed hash is made again next time
    decoyHashes.set(cost, decoy)
  }
  return decoy
}

const wrongCredentials = () => new Refusal('unauthenticated', 'Wrong email or password.')

export async function signIn(
  s: Pick<AccountServices, 'config' | 'store'> & { throttle: GuessThrottle },
  visitor: { clientAddress: string },
  input: { email: unknown; password: unknown },
): Promise<User> {
  const { throttle } = s
  const { clientAddress } = visitor
  const email = normaliseEmail(input.email)
  const password = typeof input.password === 'string' ? input.password : ''
  if (!email || password === '' || password.length > MAX_PASSWORD_LENGTH) throw wrongCredentials()
  const user = await findUserByEmail(s, email)
  // Counted before the await: a check recorded only afterwards let a parallel wave through.
  const waitMs = await throttle.begin(email, clientAddress, credentialOf(user?.passwordHash))
  let outcome: AttemptOutcome = 'not_checked'
  try {
    if (waitMs > 0) await Bun.sleep(waitMs)
    const hash = user?.passwordHash ?? (await decoyHash(s))
    outcome = (await verifyPassword(password, hash)) && user ? 'succeeded' : 'failed'
  } finally {
    await throttle.finish(email, clientAddress, outcome)
  }
  if (!user || outcome !== 'succeeded') throw wrongCredentials()
  return rehashAtConfiguredCost(s, user, password)
}
