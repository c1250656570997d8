/**
 * Keys revoked while their long polls wait. A poll is authenticated once, when it begins; a
 * key revoked during its wait (up to 180 s) must not go on receiving mail, so a waiting poll
 * ends with 401 `invalid_api_key` within a second of the revocation, as sign-out ends the
 * console's live views.
 *
 * A revocation may be made anywhere: the console of this machine or another, or the CLI (its
 * own process, in either mode). So rather than being told, each machine asks: while any poll
 * waits, one read every half second asks which of the waiting keys are revoked (one statement
 * for all of them, however many polls wait), and ends those keys' polls. Nothing runs while no
 * poll waits. A read that fails (storage away) is retried at the next tick.
 */
const REVOCATION_CHECK_MS = 500

export class KeyRevocations {
  private readonly waiting = new Map<string, Set<() => void>>()
  private timer: ReturnType<typeof setTimeout> | undefined
  private checking = false

  constructor(
    private readonly revokedAmong: (publicIds: string[]) => Promise<string[]>,
    private readonly intervalMs = REVOCATION_CHECK_MS,
  ) {}

  /** Calls `revoked` once if the key is revoked while watched; returns the unwatch function. */
  watch(publicId: string, revoked: () => void): () => void {
    const listeners = this.waiting.get(publicId) ?? new Set<() => void>()
    this.waiting.set(publicId, listeners)
    listeners.add(revoked)
    this.schedule()
    return () => {
      listeners.delete(revoked)
      if (listeners.size === 0 && this.waiting.get(publicId) === listeners) this.waiting.delete(publicId)
    }
  }

  private schedule(): void {
    if (this.timer || this.checking || this.waiting.size === 0) return
    this.timer = setTimeout(() => this.check(), this.intervalMs)
    this.timer.unref?.()
  }

  private async check(): Promise<void> {
    this.timer = undefined
    this.checking = true
    try {
      const revoked = await this.revokedAmong([...this.waiting.keys()])
      for (const publicId of revoked) {
        const listeners = this.waiting.get(publicId)
        this.waiting.delete(publicId)
        for (const listener of listeners ?? []) listener()
      }
    } catch {
      // Storage away: the polls ride it out (list-or-wait.ts); the next tick asks again.
    } finally {
      this.checking = false
      this.schedule()
    }
  }
}
