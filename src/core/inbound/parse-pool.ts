/**
 * Parsing runs in a small pool of workers (one per core), never on the event loop: postal-
 * mime on a message of tens of thousands of parts, folds or base64 lines held the only JS
 * thread, and every HTTP request and SMTP session with it, far past the 50 ms bound (figure
 * in bench/README.md).
 *
 * Each message gets a time budget once a worker starts it; past it the worker is stopped,
 * the message refused (parse_timeout) and a fresh worker takes the slot. A worker that dies
 * is replaced the same way. Messages wait in order while every worker is busy; waiting
 * does not count against the budget.
 */
import type { Limits } from '../../config.ts'
import type { Logger } from '../../log.ts'
import type { ParsedMail } from './parse.ts'
import type { ParseReply, ParseRequest } from './parse-worker.ts'
import { InboundRefusal } from './refusal.ts'

export interface ParsePoolOptions {
  /** Most workers at once (started on demand, kept while the pool lives). */
  size: number
  /** Time one message may take in a worker. */
  timeoutMs: number
  logger: Logger
  /** The worker script; tests pass a misbehaving one. */
  workerUrl?: URL
}

export interface ParseOutcome {
  mail: ParsedMail
  /** The raw bytes, back from the worker (the caller's Buffer was handed over). */
  raw: Buffer
}

interface Job {
  request: ParseRequest
  /** Its raw size, kept for logs: the request's buffer is empty once transferred. */
  size: number
  resolve: (outcome: ParseOutcome) => void
  reject: (error: unknown) => void
}

interface Slot {
  worker: Worker
  ready: boolean
  job: Job | null
  timer: ReturnType<typeof setTimeout> | undefined
}

/** Beside this module in the source tree; beside the bundle in dist/ (see `bun run build`). */
const PARSE_WORKER_URL = new URL(
  import.meta.url.endsWith('.ts') ? './parse-worker.ts' : './parse-worker.js',
  import.meta.url,
)

/** The bytes' own ArrayBuffer when they span all of it (moved, not copied); a copy otherwise. */
function transferableBytes(raw: Buffer): ArrayBuffer {
  const whole = raw.byteOffset === 0 && raw.byteLength === raw.buffer.byteLength && raw.buffer instanceof ArrayBuffer
  return whole
    ? (raw.buffer as ArrayBuffer)
    : (raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength) as ArrayBuffer)
}

const asBuffer = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)

export class ParsePool {
  private readonly slots = new Set<Slot>()
  private readonly queue: Job[] = []
  private nextId = 1
  private closed = false
  private handedOver = 0

  constructor(private readonly options: ParsePoolOptions) {}

  /** Parses `raw`, which is handed over: the caller must use the `raw` of the outcome instead. */
  parse(raw: Buffer, envelopeFrom: string, limits: Limits): Promise<ParseOutcome> {
    if (this.closed) return Promise.reject(new Error('parse pool is closed'))
    this.handedOver++
    return new Promise((resolve, reject) => {
      const request: ParseRequest = { id: this.nextId++, raw: transferableBytes(raw), envelopeFrom, limits }
      this.queue.push({ request, size: raw.byteLength, resolve, reject })
      this.dispatch()
    })
  }

  /** Messages handed to the pool so far (for tests: which path a message took). */
  get messagesHandedOver(): number {
    return this.handedOver
  }

  /** Workers started and alive (for tests and the docs' memory figures). */
  get workers(): number {
    return this.slots.size
  }

  /** Stops every worker; queued and running messages fail (their senders retry later). */
  close(): void {
    this.closed = true
    for (const job of this.queue.splice(0)) job.reject(new Error('parse pool is closed'))
    for (const slot of [...this.slots]) this.retire(slot, new Error('parse pool is closed'))
  }

  private dispatch(): void {
    for (const slot of this.slots) {
      if (this.queue.length === 0) return
      if (slot.ready && !slot.job) this.start(slot, this.queue.shift()!)
    }
    let starting = [...this.slots].filter((slot) => !slot.ready).length
    while (starting < this.queue.length && this.slots.size < this.options.size) {
      this.spawn()
      starting++
    }
  }

  private spawn(): void {
    const worker = new Worker(this.options.workerUrl ?? PARSE_WORKER_URL)
    const slot: Slot = { worker, ready: false, job: null, timer: undefined }
    this.slots.add(slot)
    // An idle pool never keeps the process alive. (Bun's Worker has unref(); the DOM type the
    // browser tests bring into the program does not.)
    ;(worker as Worker & { unref(): void }).unref()
    worker.addEventListener('message', (event: MessageEvent<ParseReply>) => this.onReply(slot, event.data))
    worker.addEventListener('error', (event) => this.onDeath(slot, (event as ErrorEvent).message))
    worker.addEventListener('close', () => this.onDeath(slot, 'worker exited'))
  }

  private start(slot: Slot, job: Job): void {
    slot.job = job
    const { timeoutMs } = this.options
    slot.timer = setTimeout(() => {
      this.options.logger.warn('parse_timeout', { size_bytes: job.size, timeout_ms: timeoutMs })
      this.retire(slot, new InboundRefusal('parse_timeout', `over ${timeoutMs} ms`))
    }, timeoutMs)
    slot.worker.postMessage(job.request, [job.request.raw])
  }

  private onReply(slot: Slot, reply: ParseReply): void {
    if ('ready' in reply) {
      slot.ready = true
      this.dispatch()
      return
    }
    const job = slot.job
    if (!job || job.request.id !== reply.id) return
    clearTimeout(slot.timer)
    slot.job = null
    if (reply.ok) {
      const attachments = reply.mail.attachments.map((attachment) => ({
        ...attachment,
        content: asBuffer(attachment.content),
      }))
      job.resolve({ mail: { ...reply.mail, attachments }, raw: Buffer.from(reply.raw) })
    } else if ('refusal' in reply) job.reject(new InboundRefusal(reply.refusal.reason, reply.refusal.detail))
    else job.reject(new InboundRefusal('unparseable', reply.error))
    this.dispatch()
  }

  private onDeath(slot: Slot, why: string): void {
    if (!this.slots.has(slot)) return // retired on purpose
    this.options.logger.error('parse_worker_died', {
      reason: why.slice(0, 200),
      started: slot.ready,
      busy: slot.job !== null,
    })
    if (!slot.ready) {
      // It could not even load: fail what waits (a temporary error) instead of respawning in a loop.
      this.slots.delete(slot)
      for (const job of this.queue.splice(0))
        job.reject(new Error(`parse worker failed to start: ${why.slice(0, 200)}`))
      return
    }
    // A message that kills the parser would do it again: refuse it like an unparseable one.
    this.retire(slot, new InboundRefusal('unparseable', 'parser failed'))
  }

  /** Stops the worker, fails its message, and lets the next dispatch start a fresh one. */
  private retire(slot: Slot, error: unknown): void {
    this.slots.delete(slot)
    clearTimeout(slot.timer)
    slot.worker.terminate()
    slot.job?.reject(error)
    slot.job = null
    if (!this.closed) this.dispatch()
  }
}
