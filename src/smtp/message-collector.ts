/**
 * Collects the DATA bytes of one transaction against the size limit and the memory budget.
 * The moment the message passes the size limit, or the budget has no room for it, the
 * bytes held so far are dropped and given back; the rest of the stream is only counted.
 * SMTP has no way to answer in the middle of DATA, so the refusal is sent after the final
 * dot (closing early would make a sending MTA retry the same message); the DATA time
 * limit bounds how long a sender can keep streaming bytes that are thrown away.
 */
import type { DataBudget } from './data-budget.ts'

export type CollectedMessage = { kind: 'complete'; raw: Buffer } | { kind: 'too_large'; size: number } | { kind: 'over_budget'; size: number }

export class MessageCollector {
  private chunks: Buffer[] = []
  private size = 0
  private held = 0
  private refused: 'too_large' | 'over_budget' | null = null

  constructor(
    private readonly budget: DataBudget,
    private readonly owner: string,
    private readonly maxBytes: number,
  ) {}

  /** Takes the chunk in; answers the refusal at the moment it is decided, else null. */
  add(chunk: Buffer): 'too_large' | 'over_budget' | null {
    this.size += chunk.length
    this.budget.flow(chunk.length)
    if (this.refused === 'too_large') return null
    // A message refused for memory that turns out too large gets the permanent 552 instead.
    if (this.size > this.maxBytes) return this.drop('too_large')
    if (this.refused) return null
    if (!this.budget.take(this.owner, chunk.length)) return this.drop('over_budget')
    this.held += chunk.length
    this.chunks.push(chunk)
    return null
  }

  /** The whole message (its bytes stay taken from the budget until release()), or why not. */
  finish(): CollectedMessage {
    if (this.refused) return { kind: this.refused, size: this.size }
    const raw = Buffer.concat(this.chunks, this.size)
    this.chunks = []
    return { kind: 'complete', raw }
  }

  /** Gives the held bytes back; safe to call more than once. */
  release(): void {
    this.budget.give(this.owner, this.held)
    this.held = 0
    this.chunks = []
  }

  private drop(reason: 'too_large' | 'over_budget'): 'too_large' | 'over_budget' {
    this.refused = reason
    this.release()
    return reason
  }
}
