/**
 * Everything that keeps one client, one slow client or one flood from holding the SMTP
 * listener or the machine's memory: the per-address connection gate, the session
 * deadlines, the DATA memory budget and the parse gates, with their log lines. The listener
 * (src/smtp/server.ts) calls in at each step of a session.
 */
import { edenGC } from 'bun:jsc'
import type { Limits } from '../config.ts'
import type { Logger } from '../log.ts'
import { AddressGate } from './address-gate.ts'
import { clientKey } from './client-key.ts'
import { CollectionPacer } from './collection-pacer.ts'
import { DataBudget } from './data-budget.ts'
import type { SmtpConnection } from './connection.ts'
import type { ConnectionGuard } from './guarded-server.ts'
import { ParseGate } from './parse-gate.ts'
import { GUARD_REPLIES } from './replies.ts'
import { SessionDeadlines, type SessionTimeouts } from './session-deadlines.ts'
import { wordSizeRefusal } from './size-declaration.ts'

/**
 * Bytes of DATA become garbage faster than the collector reclaims them by itself: under a
 * flood of parallel streams the process grew to many times the budget it was holding. A
 * full collection each time half the budget has flowed keeps RSS near what is really held
 * (figures in bench/README.md; docs/internals/smtp-guards.md). Large messages no longer get
 * one before and after their parse: their bytes leave this thread (parse worker, then the
 * SQLite blob stager), and without those collections the big-mail flood peaked at the same
 * RSS with a fifth less main-thread CPU, each collection being a turn of its own.
 */
/**
 * Each collection runs in an event-loop turn of its own, and requests made meanwhile share
 * it: run inline, it added its pause to whatever the turn was doing (storing a 10 MiB
 * message, handling a DATA chunk) and pushed that turn past the 50 ms bound. Most are eden
 * (young-generation) collections, a tenth of a full one's CPU: most DATA garbage dies young
 * now that smtp-server no longer copies each read. A full one runs once RSS has grown enough
 * since the last (CollectionPacer), for the chunks that outlived an eden one.
 */
function deferredCollector(growthBeforeFull: number): () => void {
  const pacer = new CollectionPacer(growthBeforeFull)
  let queued = false
  return () => {
    if (queued) return
    queued = true
    setImmediate(() => {
      queued = false
      if (pacer.next() === 'eden') {
        edenGC()
        return
      }
      Bun.gc(true)
      pacer.fullDone()
    })
  }
}
/**
 * A full collection once RSS has grown by this many flows between collections (32 MiB at the
 * default budget): under the big-mail flood about one in three collections is then full, where
 * every other one was. Three flows made the flood's peak RSS reach 348 MiB on the quiet
 * machine, too near its 384 MiB bound; with two it peaked at 308 to 321 MiB, at 78 to 82 MiB/s
 * and a slowest `/health` of 32 to 48 ms (docs/internals/inbound-processing.md).
 */
const FLOWS_OF_GROWTH_BEFORE_FULL = 2
/** Floors for small configured limits (tests), where a collection per few KiB would cost more than it saves. */
const MIN_FLOW_BETWEEN_COLLECTIONS = 16 * 1024 * 1024
/**
 * Messages up to this size are parsed in a lane of their own, at most `SMALL_LANE_BYTES` of
 * them at once: behind a queue of 200 big messages, parsed one at a time, a sign-up code
 * would otherwise wait most of a minute for its turn (parse times in bench/README.md).
 */
const SMALL_MESSAGE_BYTES = 256 * 1024
const SMALL_LANE_BYTES = 1024 * 1024

export class SmtpGuards implements ConnectionGuard {
  readonly budget: DataBudget
  /**
   * Large messages being read back and parsed: at most LIMIT_MESSAGE_BYTES raw bytes at once.
   * A message leaves it once parsed, for `storing`.
   */
  readonly parsing: ParseGate
  /**
   * Large messages parsed and being stored (blobs written, committed): at most
   * LIMIT_MESSAGE_BYTES at once, entered before leaving `parsing`, left at the commit, so
   * the next one writes while the WAL sync its 250 waits for runs
   * (test/smtp/smtp.store-gate.test.ts). So one message is parsed while the one before it is
   * written, and written while the one before that is synced: one after the other, the cores sat mostly
   * idle through a flood of big messages (15 MiB/s, each message's parse, stage, commit and
   * fsync in series). Two whole messages in the parse gate instead also parsed two at once,
   * which raised the flood's peak RSS by 30 to 55 MiB, too near its bound.
   */
  readonly storing: ParseGate
  /** Small messages, beside the large ones (see SMALL_MESSAGE_BYTES). */
  readonly parsingSmall: ParseGate
  private readonly gate: AddressGate
  private readonly deadlines = new Map<string, SessionDeadlines>()
  private readonly timeouts: SessionTimeouts

  constructor(
    limits: Limits,
    private readonly logger: Logger,
    /** Reply text for a SIZE= declaration over the limit. */
    private readonly sizeRefusal: string,
    /** Told of every change of the bytes held (the metrics gauge). */
    onHeld: (delta: number) => void = () => {},
  ) {
    const flowBetweenCollections = Math.max(limits.smtpDataMemoryBytes / 2, MIN_FLOW_BETWEEN_COLLECTIONS)
    const collectGarbage = deferredCollector(FLOWS_OF_GROWTH_BEFORE_FULL * flowBetweenCollections)
    this.budget = new DataBudget(limits.smtpDataMemoryBytes, collectGarbage, flowBetweenCollections, onHeld)
    this.parsing = new ParseGate(limits.messageBytes)
    this.storing = new ParseGate(limits.messageBytes)
    this.parsingSmall = new ParseGate(SMALL_LANE_BYTES)
    this.gate = new AddressGate(limits.smtpMaxClientsPerAddress)
    this.timeouts = {
      greetingMs: limits.smtpGreetingTimeoutMs,
      commandMs: limits.smtpCommandTimeoutMs,
      dataMs: limits.smtpDataTimeoutMs,
      sessionMs: limits.smtpSessionTimeoutMs,
    }
  }

  /** The parse gate for a message of `size` bytes. */
  parseGateFor(size: number): ParseGate {
    return size <= SMALL_MESSAGE_BYTES ? this.parsingSmall : this.parsing
  }

  /** The gate a message of `size` bytes waits for once parsed, before it leaves its parse gate; none for small ones. */
  storeGateFor(size: number): ParseGate | null {
    return size <= SMALL_MESSAGE_BYTES ? null : this.storing
  }

  admit(sessionId: string, remoteAddress: string): boolean {
    const key = clientKey(remoteAddress)
    if (this.gate.enter(sessionId, key)) return true
    this.logger.info('smtp_refused', {
      reason: 'too_many_connections',
      remote: remoteAddress,
      open_from_address: this.gate.openFrom(key),
    })
    return false
  }

  opened(connection: SmtpConnection): void {
    wordSizeRefusal(connection, this.sizeRefusal)
    const deadlines = new SessionDeadlines(connection, this.timeouts, (reason) => {
      this.logger.info('smtp_refused', { session_id: connection.id, reason, remote: connection.remoteAddress })
      const reply = GUARD_REPLIES[reason]
      connection.send(reply.code, reply.text) // a 421 also closes the connection
    })
    this.deadlines.set(connection.id, deadlines)
  }

  /** The deadlines of a session, absent once it closed (or if smtp-server refused it). */
  of(sessionId: string): SessionDeadlines | undefined {
    return this.deadlines.get(sessionId)
  }

  closed(sessionId: string): void {
    this.deadlines.get(sessionId)?.stop()
    this.deadlines.delete(sessionId)
    this.gate.leave(sessionId)
  }

  static refusalLine(): string {
    const reply = GUARD_REPLIES.too_many_connections
    return `${reply.code} ${reply.text}`
  }
}
