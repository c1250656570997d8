/**
 * Collects the DATA bytes of one transaction. The first `SPOOL_AFTER_BYTES` stay in memory,
 * within the shared DATA budget; past that, or when the budget has no room, the message
 * continues in a spool file (src/storage/spool.ts), so the memory of many senders mid-DATA
 * is a few hundred KiB each instead of their whole messages. Writes to the file are one at
 * a time; while one is behind by `MAX_UNWRITTEN_BYTES` the stream is paused, which stops
 * reading the socket (smtp-server waits for the stream to drain), so a disk slower than the
 * network holds the sender back instead of piling bytes up in memory.
 *
 * The moment the message passes the size limit, everything held is dropped (and a spool
 * file deleted); the rest of the stream is only counted. SMTP has no way to answer in the
 * middle of DATA, so the refusal is sent after the final dot (closing early would make a
 * sending MTA retry the same message); the DATA time limit bounds how long a sender can
 * keep streaming bytes that are thrown away.
 */
import type { DataSpool, SpooledData } from '../core/common/services.ts'
import type { DataBudget } from './data-budget.ts'

/** Messages up to this size never touch the disk while the budget has room: most test mail is a few KiB. */
const SPOOL_AFTER_BYTES = 128 * 1024
/** Bytes received but not yet written to the spool file before the stream is paused. */
const MAX_UNWRITTEN_BYTES = 64 * 1024
/**
 * A sender that holds a read turn but has not filled `MAX_UNWRITTEN_BYTES` within this long
 * is slow: it gives the turn back and keeps flowing (what it sends is little), so a few slow
 * senders cannot keep the fast ones paused.
 */
const SLOW_TURN_MS = 250

export type CollectedMessage =
  | { kind: 'complete'; size: number; spooled: boolean; load: () => Promise<Buffer> }
  | { kind: 'too_large'; size: number }
  | { kind: 'spool_failed'; size: number; error: unknown }

/** The stream's flow control, as the collector needs it. */
export interface Flow {
  pause(): void
  resume(): void
}

export class MessageCollector {
  private chunks: Buffer[] = []
  private size = 0
  private held = 0
  private refused: 'too_large' | null = null
  private spooling = false
  private file: SpooledData | null = null
  private unwritten: Buffer[] = []
  private unwrittenBytes = 0
  private writing: Promise<void> | null = null
  private failure: unknown = null
  private paused = false
  private released = false
  /** Gives back the spool's read turn while this stream holds one (after a pause it resumes only with a turn). */
  private turn: (() => void) | null = null
  private turnTimer: ReturnType<typeof setTimeout> | null = null

  constructor(
    private readonly budget: DataBudget,
    private readonly owner: string,
    private readonly maxBytes: number,
    private readonly spool: DataSpool,
    private readonly flow: Flow,
    private readonly memoryBytes: number = SPOOL_AFTER_BYTES,
    /** A test of the turns alone sets it long, so a busy machine's pause cannot pass it. */
    private readonly slowTurnMs: number = SLOW_TURN_MS,
  ) {}

  /**
   * Takes the chunk in; answers what changed with it ('too_large'
   * when refused, 'spooled' when it moved to disk), else null.
   */
  add(chunk: Buffer): 'too_large' | 'spooled' | null {
    this.size += chunk.length
    this.budget.flow(chunk.length)
    if (this.refused) return null
    if (this.size > this.maxBytes) {
      this.refused = 'too_large'
      this.release()
      return 'too_large'
    }
    if (this.failure || this.released) return null // only counted: the reply after the dot says why
    if (this.spooling) {
      this.queue(chunk)
      return null
    }
    if (this.size <= this.memoryBytes && this.budget.take(this.owner, chunk.length)) {
      this.held += chunk.length
      this.chunks.push(chunk)
      return null
    }
    // Too big for memory, or no room: what is held goes to the file first, then this chunk.
    this.spooling = true
    const held = this.chunks
    this.chunks = []
    this.budget.give(this.owner, this.held)
    this.held = 0
    for (const earlier of held) this.queue(earlier)
    this.queue(chunk)
    return 'spooled'
  }

  /** After the final dot: waits for the file to be written, then says what was received. */
  async finish(): Promise<CollectedMessage> {
    while (this.writing) await this.writing
    this.giveTurn()
    if (this.refused) return { kind: this.refused, size: this.size }
    if (this.failure) return { kind: 'spool_failed', size: this.size, error: this.failure }
    if (this.spooling) {
      const file = this.file!
      return { kind: 'complete', size: this.size, spooled: true, load: () => file.read() }
    }
    const raw = Buffer.concat(this.chunks, this.size)
    this.chunks = []
    return { kind: 'complete', size: this.size, spooled: false, load: async () => raw }
  }

  /** Gives the held bytes back and deletes the spool file; safe to call more than once. */
  release(): void {
    this.budget.give(this.owner, this.held)
    this.held = 0
    this.chunks = []
    this.unwritten = []
    this.unwrittenBytes = 0
    this.giveTurn()
    this.resume()
    if (this.released) return
    this.released = true
    void this.removeFile()
  }

  private queue(chunk: Buffer): void {
    this.unwritten.push(chunk)
    this.unwrittenBytes += chunk.length
    if (this.unwrittenBytes >= MAX_UNWRITTEN_BYTES && !this.paused) {
      this.paused = true
      this.flow.pause()
    }
    // The loop's first step always awaits, so `writing` is set before the loop can clear it.
    if (!this.writing) this.writing = this.writeAll()
  }

  /** Writes what is queued, batch after batch, until nothing is left or the message was dropped. */
  private async writeAll(): Promise<void> {
    try {
      this.file ??= await this.spool.create()
      while (this.unwritten.length > 0 && !this.released) {
        const batch = this.unwritten
        this.unwritten = []
        this.unwrittenBytes = 0
        await this.file.append(batch)
        if (this.unwritten.length === 0) await this.resumeInTurn()
      }
    } catch (error) {
      // A full disk, most likely: the rest of the stream is only counted, and the sender is
      // answered after the final dot.
      this.failure = error
      this.unwritten = []
      this.unwrittenBytes = 0
      this.giveTurn()
      this.resume()
    }
    this.writing = null
  }

  /** After a write: a paused stream gives back its turn and waits, holding nothing, for the next. */
  private async resumeInTurn(): Promise<void> {
    if (!this.paused) return
    this.giveTurn()
    const turn = await this.spool.readTurn()
    if (this.released || this.failure) return turn()
    this.turn = turn
    this.turnTimer = setTimeout(() => {
      this.turnTimer = null
      if (!this.paused) this.giveTurn()
    }, this.slowTurnMs)
    this.resume()
  }

  private giveTurn(): void {
    if (this.turnTimer) clearTimeout(this.turnTimer)
    this.turnTimer = null
    this.turn?.()
    this.turn = null
  }

  private resume(): void {
    if (!this.paused) return
    this.paused = false
    this.flow.resume()
  }

  private async removeFile(): Promise<void> {
    while (this.writing) await this.writing
    await this.file?.remove()
  }
}
