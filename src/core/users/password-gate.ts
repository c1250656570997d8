/**
 * One gate for every argon2id operation of the process: sign-in, password change, invite
 * sign-up, setup, the operator's reset, the rehash at sign-in and the decoy hash. Each costs
 * about 64 MiB and tens of milliseconds of a core, so a form without a cap (say, a wave of
 * password changes with wrong current passwords) could starve every other check.
 *
 * At most MAX_CONCURRENT_PASSWORD_WORK run at once. A few more (MAX_QUEUED_PASSWORD_WORK)
 * wait their turn in order, so a sign-in that lands during a burst waits for at most two
 * rounds of checks instead of being refused; past that the caller is refused at once with
 * `throttled` (Retry-After 1), so a flood holds neither memory nor an unbounded queue.
 * One per process, because the CPU and memory it protects are the process's.
 */
import { Refusal } from '../common/refusals.ts'

export const MAX_CONCURRENT_PASSWORD_WORK = 4
export const MAX_QUEUED_PASSWORD_WORK = 4

export class PasswordGate {
  private running = 0
  private readonly waiting: Array<() => void> = []

  constructor(
    private readonly limit = MAX_CONCURRENT_PASSWORD_WORK,
    private readonly queueLimit = MAX_QUEUED_PASSWORD_WORK,
  ) {}

  /** Operations running now (for tests). */
  get inFlight(): number {
    return this.running
  }

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.running >= this.limit) {
      if (this.waiting.length >= this.queueLimit)
        throw new Refusal('throttled', 'Too many password checks at once. Try again in a second.', 1)
      // The slot is handed over by the finishing operation (below), so `running` never dips.
      await new Promise<void>((resolve) => this.waiting.push(resolve))
    } else {
      this.running++
    }
    try {
      return await work()
    } finally {
      const next = this.waiting.shift()
      if (next) next()
      else this.running--
    }
  }
}

export const passwordGate = new PasswordGate()

/** Bun.password.verify through the gate. */
export const verifyPassword = (password: string, hash: string): Promise<boolean> =>
  passwordGate.run(() => Bun.password.verify(password, hash))
