/**
 * The DATA spool: a folder on the data volume where a message in transfer goes once it is
 * too big to keep in memory, the way Postfix streams DATA into a queue file. Memory then no
 * longer grows with the number of senders mid-DATA; what bounds it is how much is parsed at
 * once (src/smtp/parse-gate.ts).
 *
 * A spool file is only a transfer buffer, never a copy of record: the message is durable
 * once the database commit that the 250 waits for has synced, and the file is deleted right
 * after. So the files are not synced, and whatever is in the folder at start-up (a crash or
 * a kill in the middle of a transfer) belongs to a message that never got its 250: clear()
 * removes it.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { type FileHandle, open, unlink } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'

/**
 * One spool write or flush at a time, whatever the number of senders. Bun's file I/O shares
 * a small thread pool (two threads here) with the WAL sync that every 250 waits for; 200
 * senders' flushes queued in it held a small message's 250 for seconds. In a line of their
 * own they leave the other threads to the database, and the disk writes them no slower.
 */
class IoLine {
  private busy = false
  private readonly waiting: Array<() => void> = []

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.busy) await new Promise<void>((go) => this.waiting.push(go))
    this.busy = true
    try {
      return await work()
    } finally {
      const next = this.waiting.shift()
      if (next) next()
      else this.busy = false
    }
  }
}

/**
 * How many spooling senders may read from their socket at once. Bun reads a socket up to
 * 512 KiB at a time, and a read waits in memory for its turn in the I/O line: with 200
 * senders each holding one, that was 100 MiB of a 512 MiB machine. A sender without a turn
 * stays paused, its bytes in the kernel's socket buffer (not this process's memory), and the
 * line, which writes one chunk at a time anyway, is no slower for it.
 */
export const READING_SENDERS = 16

/** Turns handed out first come, first served. */
class Turns {
  private free: number
  private readonly waiting: Array<() => void> = []

  constructor(count: number) {
    this.free = count
  }

  /** Resolves with the function that gives the turn back (once; later calls do nothing). */
  async take(): Promise<() => void> {
    if (this.free > 0) this.free--
    else await new Promise<void>((go) => this.waiting.push(go))
    let given = false
    return () => {
      if (given) return
      given = true
      const next = this.waiting.shift()
      if (next) next()
      else this.free++
    }
  }
}

export class Spool {
  private bytes_ = 0
  private next = 0
  private readonly line = new IoLine()
  private readonly turns = new Turns(READING_SENDERS)

  constructor(
    readonly dir: string,
    /** Made for this process alone: removed with it at close(). */
    private readonly temporary = false,
  ) {
    mkdirSync(dir, { recursive: true, mode: 0o700 })
  }

  /** The spool for a database file: a folder beside it. An in-memory database spools to a private temp folder. */
  static forDatabase(databasePath: string): Spool {
    if (databasePath !== ':memory:') return new Spool(join(dirname(databasePath), 'spool'))
    return new Spool(mkdtempSync(join(tmpdir(), 'pigeonhole-spool-')), true)
  }

  /** Removes every file left by an earlier process; returns how many there were. Call before SMTP listens. */
  clear(): number {
    const names = readdirSync(this.dir)
    for (const name of names) rmSync(join(this.dir, name), { force: true, recursive: true })
    return names.length
  }

  /** Bytes in spool files right now (the free-space guard counts them as already promised to the database). */
  get bytes(): number {
    return this.bytes_
  }

  /** A turn to read from the socket (see READING_SENDERS); call the answer to give it back. */
  readTurn(): Promise<() => void> {
    return this.turns.take()
  }

  /** A new, empty spool file, readable and writable by this process only. */
  async create(): Promise<SpoolFile> {
    const path = join(this.dir, `${process.pid}-${++this.next}.eml`)
    const handle = await open(path, 'wx+', 0o600)
    return new SpoolFile(path, handle, (delta) => (this.bytes_ += delta), this.line)
  }

  /** At shutdown: a temp folder of an in-memory database goes with the process. */
  close(): void {
    if (this.temporary) rmSync(this.dir, { recursive: true, force: true })
  }
}

/**
 * Written bytes are flushed to the disk every this many per file. Not for durability: dirty
 * page-cache pages count against the machine's (or the memory cgroup's) memory until the
 * kernel writes them back, and with a flood spooling faster than writeback, a 512 MiB cgroup
 * filled with them and every allocation of the server waited on reclaim (one message stored
 * in four minutes). Flushed pages are clean and reclaimed at once; the flush runs on Bun's
 * thread pool, and the wait slows that sender's stream (TCP backpressure), not the server.
 */
const FLUSH_EVERY_BYTES = 1024 * 1024

export class SpoolFile {
  private size_ = 0
  private unflushed = 0
  private removed = false

  constructor(
    readonly path: string,
    private readonly handle: FileHandle,
    private readonly counted: (delta: number) => void,
    private readonly line: IoLine,
  ) {}

  get size(): number {
    return this.size_
  }

  /** Appends `chunks` in one call; the caller waits for one append before the next. */
  append(chunks: Buffer[]): Promise<void> {
    return this.line.run(() => this.appendNow(chunks))
  }

  private async appendNow(chunks: Buffer[]): Promise<void> {
    let position = this.size_
    for (let written = 0, total = chunks.reduce((sum, c) => sum + c.length, 0); written < total; ) {
      const { bytesWritten } = await this.handle.writev(
        written === 0 ? chunks : [Buffer.concat(chunks).subarray(written)],
        position,
      )
      written += bytesWritten
      position += bytesWritten
      this.size_ += bytesWritten
      this.unflushed += bytesWritten
      this.counted(bytesWritten)
    }
    if (this.unflushed >= FLUSH_EVERY_BYTES) {
      this.unflushed = 0
      await this.handle.datasync()
    }
  }

  /** The whole file as one Buffer of its own (so it can be transferred to a parse worker). */
  async read(): Promise<Buffer> {
    const bytes = Buffer.allocUnsafeSlow(this.size_)
    for (let at = 0; at < bytes.length; ) {
      const { bytesRead } = await this.handle.read(bytes, at, bytes.length - at, at)
      if (bytesRead === 0) throw new Error(`spool file ${this.path} ended at ${at} of ${bytes.length} bytes`)
      at += bytesRead
    }
    return bytes
  }

  /** Closes and deletes the file; safe to call more than once. */
  async remove(): Promise<void> {
    if (this.removed) return
    this.removed = true
    this.counted(-this.size_)
    await this.handle.close().catch(() => {})
    await unlink(this.path).catch(() => {})
  }
}
