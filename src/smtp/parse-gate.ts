/**
 * Parsing a message takes several times its raw size in memory (decoded parts, strings), so
 * messages whose DATA completed at the same moment are parsed and stored a few at a time:
 * at most `capacity` raw bytes at once, first come first served. One message is always let
 * through, whatever its size, so nothing waits forever. The sender waits for its reply
 * meanwhile (RFC 5321 gives it ten minutes); its bytes stay counted in the DATA budget, so
 * new messages get 452 instead of piling up behind.
 */
export class ParseGate {
  private inFlight = 0
  private readonly queue: Array<{ size: number; go: () => void }> = []

  constructor(
    readonly capacity: number,
    /**
     * Called before and after each message of at least `largeBytes`: its parse takes about
     * ten times its size, best taken from memory just freed, and leaves as much garbage.
     */
    private readonly aroundLarge: () => void = () => {},
    private readonly largeBytes: number = capacity / 4,
  ) {}

  /**
   * Runs `work` inside the gate. `work` may leave before it ends (`leave`, once the part that
   * needs the gate is done); the gate is left when it ends in any case.
   */
  async run<T>(size: number, work: (leave: () => void) => Promise<T>): Promise<T> {
    const leave = await this.take(size)
    try {
      return await work(leave)
    } finally {
      leave()
    }
  }

  /** Waits for room for `size` bytes; resolves with the function that leaves (once; later calls do nothing). */
  async take(size: number): Promise<() => void> {
    await this.enter(size)
    const large = size >= this.largeBytes
    if (large) this.aroundLarge()
    let left = false
    return () => {
      if (left) return
      left = true
      this.inFlight -= size
      if (large) this.aroundLarge()
      this.admitWaiting()
    }
  }

  private enter(size: number): Promise<void> {
    if (this.queue.length === 0 && this.fits(size)) {
      this.inFlight += size
      return Promise.resolve()
    }
    return new Promise((go) => this.queue.push({ size, go }))
  }

  private fits(size: number): boolean {
    return this.inFlight === 0 || this.inFlight + size <= this.capacity
  }

  private admitWaiting(): void {
    while (this.queue.length > 0 && this.fits(this.queue[0]!.size)) {
      const next = this.queue.shift()!
      this.inFlight += next.size
      next.go()
    }
  }
}
