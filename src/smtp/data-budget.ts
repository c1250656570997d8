/**
 * The memory budget for DATA bytes held across all SMTP connections. smtp-server hands each
 * message over as a stream and keeps nothing; we collect it to parse it, so without a bound
 * a few hundred parallel 10 MiB messages would take the process past the machine's memory.
 * Bytes are taken as they arrive and given back when the message is stored or refused.
 *
 * One owner (a client address) may hold at most half the budget, so a flood from one
 * address always leaves room for everyone else.
 */
export class DataBudget {
  private used = 0
  private flowed = 0
  private readonly byOwner = new Map<string, number>()
  readonly perOwner: number

  constructor(
    readonly total: number,
    /** Called each time another `flowEvery` bytes have flowed through (taken or only counted). */
    private readonly onFlow: () => void = () => {},
    private readonly flowEvery: number = Math.floor(total / 2),
    /** Called with each change of the bytes held. */
    private readonly onHeld: (delta: number) => void = () => {},
  ) {
    this.perOwner = Math.floor(total / 2)
  }

  /** Counts bytes that arrived, whether they are kept or thrown away. */
  flow(bytes: number): void {
    this.flowed += bytes
    if (this.flowed < this.flowEvery) return
    this.flowed = 0
    this.onFlow()
  }

  /** Takes `bytes` for `owner` if both the whole budget and the owner's half have room. */
  take(owner: string, bytes: number): boolean {
    const held = this.byOwner.get(owner) ?? 0
    if (this.used + bytes > this.total || held + bytes > this.perOwner) return false
    this.used += bytes
    this.byOwner.set(owner, held + bytes)
    this.onHeld(bytes)
    return true
  }

  give(owner: string, bytes: number): void {
    if (bytes <= 0) return
    const held = (this.byOwner.get(owner) ?? 0) - bytes
    this.used -= bytes
    this.onHeld(-bytes)
    if (held > 0) this.byOwner.set(owner, held)
    else this.byOwner.delete(owner)
  }

  get held(): number {
    return this.used
  }
}
