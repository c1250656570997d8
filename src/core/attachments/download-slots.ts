/**
 * Concurrent attachment downloads per organisation, on each machine. One free-plan key, well
 * inside its 120 requests a minute, could start a hundred 5 MiB downloads at once: each read
 * takes a database connection (PostgreSQL) or the event loop (SQLite) and its bytes take
 * memory until sent, and another organisation's API calls and SMTP commands on that machine
 * then waited seconds. So an organisation holds at most DOWNLOADS_PER_ORGANIZATION downloads
 * at a time on a machine, from the read until its last byte is handed to the connection (or
 * the client leaves); beyond, 429 `rate_limit_exceeded` with `Retry-After: 1` (the interface's
 * 429 for this operation; the limit is the pace at which the bytes can be read and sent).
 */
import { DomainError } from '../common/errors.ts'

/** Enough for a test run's parallel workers; a hundred at once is what starved the others. */
export const DOWNLOADS_PER_ORGANIZATION = 4

/**
 * Reads of stored bytes running at once on a machine, whichever organisations download. In
 * PostgreSQL mode each read holds a pool connection while a slice of the bytes comes in
 * (storage/postgres/store/messages.ts); four downloads reading at once kept a small pool busy
 * and another organisation's calls waited for a connection. Two leave the rest of the pool to
 * everything else; a download waiting here waits for a read (milliseconds), not a transfer.
 */
const READS_AT_ONCE = 2

/** How long a console download waits for its organisation's slot before its 429, and how many may wait. */
export const CONSOLE_WAIT_MS = 10_000
export const WAITING_PER_ORGANIZATION = 32

/**
 * CONSOLE_WAIT_MS, shortened to end a second before HTTP_IDLE_TIMEOUT_SECONDS: Bun cuts a
 * connection silent that long even while its request waits, and a cut is no answer at all.
 */
export const consoleWaitMs = (idleTimeoutSeconds: number): number =>
  Math.max(0, Math.min(CONSOLE_WAIT_MS, idleTimeoutSeconds * 1000 - 1000))

export class DownloadSlots {
  private readonly held = new Map<string, number>()
  /** Console downloads waiting for a slot, per organisation, in the order asked. */
  private readonly queues = new Map<string, (() => void)[]>()
  private reads = 0
  private readonly readQueue: (() => void)[] = []

  constructor(
    private readonly perOrganization = DOWNLOADS_PER_ORGANIZATION,
    private readonly readsAtOnce = READS_AT_ONCE,
  ) {}

  /** Runs `read` when fewer than READS_AT_ONCE reads run on this machine, in the order asked. */
  async reading<T>(read: () => Promise<T>): Promise<T> {
    if (this.reads >= this.readsAtOnce) await new Promise<void>((resolve) => this.readQueue.push(resolve))
    else this.reads++
    try {
      return await read()
    } finally {
      // The turn passes straight to the next in line (the count stays), or the count drops.
      const next = this.readQueue.shift()
      if (next) next()
      else this.reads--
    }
  }

  /** Takes a slot or throws 429; the returned function frees it (calling it twice is harmless). */
  acquire(organizationId: string): () => void {
    const now = this.held.get(organizationId) ?? 0
    if (now >= this.perOrganization) throw this.refusal()
    this.held.set(organizationId, now + 1)
    return this.releaser(organizationId)
  }

  /**
   * Takes a slot, waiting up to `waitMs` for one in the order asked; 429 when none came by
   * then or when WAITING_PER_ORGANIZATION already wait. For the console: a browser loads a
   * message's thumbnails several at a time and does not retry an `<img>` answered 429, so
   * they wait their turn instead. A waiting request holds no bytes and no connection.
   */
  async acquireInTurn(organizationId: string, waitMs = CONSOLE_WAIT_MS): Promise<() => void> {
    if ((this.held.get(organizationId) ?? 0) < this.perOrganization) return this.acquire(organizationId)
    const queue = this.queues.get(organizationId) ?? []
    if (queue.length >= WAITING_PER_ORGANIZATION) throw this.refusal()
    this.queues.set(organizationId, queue)
    return new Promise((resolve, reject) => {
      const handOver = () => {
        clearTimeout(timer)
        resolve(this.releaser(organizationId))
      }
      const timer = setTimeout(() => {
        queue.splice(queue.indexOf(handOver), 1)
        if (queue.length === 0 && this.queues.get(organizationId) === queue) this.queues.delete(organizationId)
        reject(this.refusal())
      }, waitMs)
      queue.push(handOver)
    })
  }

  /** Frees the slot once: to the first request waiting for one, or back to the organisation. */
  private releaser(organizationId: string): () => void {
    let released = false
    return () => {
      if (released) return
      released = true
      const queue = this.queues.get(organizationId)
      const next = queue?.shift()
      if (queue?.length === 0) this.queues.delete(organizationId)
      if (next) return next() // the slot passes on: the count stays
      const left = (this.held.get(organizationId) ?? 1) - 1
      if (left > 0) this.held.set(organizationId, left)
      else this.held.delete(organizationId)
    }
  }

  private refusal(): DomainError {
    return new DomainError(
      'rate_limit_exceeded',
      `Too many concurrent attachment downloads: at most ` +
        `${this.perOrganization} per organization at a time; retry in a second.`,
      {
        retryAfterSeconds: 1,
      },
    )
  }

  /** Console downloads waiting for a slot on this machine, across organisations (tests). */
  waiting(): number {
    let sum = 0
    for (const queue of this.queues.values()) sum += queue.length
    return sum
  }

  /** Downloads in progress on this machine, across organisations (tests, metrics). */
  total(): number {
    let sum = 0
    for (const held of this.held.values()) sum += held
    return sum
  }
}
