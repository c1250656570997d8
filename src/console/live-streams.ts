/**
 * Server-sent events for the inbox page: one stream per open page, fed by the in-process
 * notifier right after a message is committed (the page then re-reads its list; nothing
 * polls). A stream ends when the browser leaves, when the inbox is deleted, when the
 * server begins shutting down, and when its access ends (see StreamAccess). Open streams
 * are bounded per user and per organisation, since each one holds a connection and a
 * listener for as long as a tab stays open. In SQLite mode one process counts them here; in
 * PostgreSQL mode a person's tabs land on different machines, so the bounds are counted in
 * the database (SharedStreamSlots: slot leases that a dead machine's streams hold no longer
 * than their lease).
 */
import { Refusal } from '../core/common/refusals.ts'
import type { Services } from '../core/common/services.ts'

export const MAX_STREAMS_PER_USER = 10
export const MAX_STREAMS_PER_ORGANIZATION = 50
/** A comment line this often keeps proxies (and Bun's idle timeout) from closing a quiet stream. */
const KEEP_ALIVE_MS = 25_000
/** The longest a stream's connection is silent, with slack for Bun's coarse idle timer. */
export const STREAM_SILENCE_SECONDS = KEEP_ALIVE_MS / 1000 + 10

const encoder = new TextEncoder()

/**
 * Who a stream is for, and how to tell that they may still read it. A stream outlives the
 * request that checked the session and the membership, so `stillAllowed` is asked again
 * before every event and keep-alive (which catches an expiry, or a reset made by the CLI in
 * another process, within one keep-alive), and at once when any machine ends a session or
 * a membership of the user (recheckUser). A stream that is no longer allowed ends unsent.
 */
export interface StreamAccess {
  userId: string
  organizationId: string
  stillAllowed: () => boolean | Promise<boolean>
}

/**
 * PostgreSQL mode: ended accesses told to every machine (the wake bus), so a sign-out on one
 * machine ends the user's streams on another at once.
 */
export interface AccessEnded {
  /** Tells every machine, after the change committed, that a session or membership of the user ended. */
  announce(userId: string): void
  /** Hears every announcement, this machine's included; `null` when some may have gone unheard (recheck all). */
  listen(listener: (userId: string | null) => void): void
}

/** The bounds counted across machines (PostgreSQL mode: createLiveStreamLeases). */
export interface SharedStreamSlots {
  open(owner: {
    userId: string
    organizationId: string
  }): Promise<{ opened: true; lease: { release(): Promise<void> } } | { opened: false; full: 'user' | 'organization' }>
}

const perUserRefusal = () =>
  new Refusal(
    'throttled',
    `At most ${MAX_STREAMS_PER_USER} live inbox pages per person may be open; close some tabs.`,
    5,
  )
const perOrganizationRefusal = () =>
  new Refusal(
    'throttled',
    `At most ${MAX_STREAMS_PER_ORGANIZATION} live inbox pages per organisation may be open; close some tabs.`,
    5,
  )

export class LiveStreams {
  /**
   * `shared` counts the bounds across machines; without it this process counts them.
   * `accessEnded` carries recheckUser to every machine (without it, this process is all).
   */
  constructor(
    private readonly shared: SharedStreamSlots | null = null,
    private readonly accessEnded: AccessEnded | null = null,
  ) {
    accessEnded?.listen((userId) => (userId === null ? this.recheckEveryone() : this.recheckHere(userId)))
  }

  private readonly perUser = new Map<string, number>()
  private readonly perOrganization = new Map<string, number>()
  /** Each open stream's recheck, by user, so ending a user's access reaches only their streams. */
  private readonly rechecks = new Map<string, Set<() => void>>()

  /** Open streams in total (for tests and logs). */
  get open(): number {
    let total = 0
    for (const n of this.perUser.values()) total += n
    return total
  }

  /**
   * Call after a session or membership of the user ended (sign-out, sign-out everywhere, a
   * password change or reset, removal from an organisation): each of their open streams asks
   * its `stillAllowed` and ends if the answer is no.
   */
  recheckUser(userId: string): void {
    this.recheckHere(userId)
    // The other machines' streams of the user; this machine hears it too, a second cheap check.
    this.accessEnded?.announce(userId)
  }

  private recheckHere(userId: string): void {
    for (const recheck of [...(this.rechecks.get(userId) ?? [])]) recheck()
  }

  private recheckEveryone(): void {
    for (const userId of [...this.rechecks.keys()]) this.recheckHere(userId)
  }

  /**
   * Starts a stream of the inbox's events, or refuses with `throttled` when a bound is reached.
   * Given several inboxes (one browser's shared stream, see routes/live.ts), it carries the
   * events of all of them, each naming its inbox, and stays open when one is deleted.
   */
  stream(
    s: Services,
    signal: AbortSignal,
    owner: StreamAccess,
    inboxIds: string | string[],
  ): Response | Promise<Response> {
    if (this.shared) {
      return this.shared.open(owner).then((admission) => {
        if (!admission.opened) throw admission.full === 'user' ? perUserRefusal() : perOrganizationRefusal()
        // A release that fails leaves the slots to run out with this machine's lease.
        return this.opened(s, signal, owner, inboxIds, () => void admission.lease.release().catch(() => {}))
      })
    }
    if ((this.perUser.get(owner.userId) ?? 0) >= MAX_STREAMS_PER_USER) throw perUserRefusal()
    if ((this.perOrganization.get(owner.organizationId) ?? 0) >= MAX_STREAMS_PER_ORGANIZATION)
      throw perOrganizationRefusal()
    return this.opened(s, signal, owner, inboxIds, () => {})
  }

  /** The stream, once admitted; `release` gives its shared slots back when it ends. */
  private opened(
    s: Services,
    signal: AbortSignal,
    owner: StreamAccess,
    inboxIds: string | string[],
    release: () => void,
  ): Response {
    const watched = typeof inboxIds === 'string' ? [inboxIds] : inboxIds
    const inboxId = watched.join(',')
    adjust(this.perUser, owner.userId, 1)
    adjust(this.perOrganization, owner.organizationId, 1)
    let close = () => {}
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        let closed = false
        const openedAt = performance.now()
        let ending = 'client_left'
        // The check reads the database, so it is asynchronous: checks and sends run one after
        // another in the order they were asked for, so events keep their order.
        let turn: Promise<void> = Promise.resolve()
        const inTurn = (step: () => Promise<void>) => {
          turn = turn.then(step)
        }
        const allowed = async (): Promise<boolean> => {
          if (closed) return false
          let yes: boolean
          try {
            yes = await owner.stillAllowed()
          } catch {
            yes = false // a check that cannot be made ends the stream; the page reconnects
          }
          if (!yes && !closed) {
            ending = 'access_ended'
            close()
          }
          return yes && !closed
        }
        const recheck = () =>
          inTurn(async () => {
            await allowed()
          })
        const send = (text: string) =>
          inTurn(async () => {
            if (!(await allowed())) return
            try {
              controller.enqueue(encoder.encode(text))
            } catch {
              close()
            }
          })
        const mine = this.rechecks.get(owner.userId) ?? new Set<() => void>()
        this.rechecks.set(owner.userId, mine)
        mine.add(recheck)
        const unsubscribes = watched.map((id) =>
          s.notifier.subscribe(id, (event) => {
            send(`event: ${event}\ndata: ${id}\n\n`)
            // After that event has gone out: the close waits its turn too.
            if (event === 'inbox_deleted' && typeof inboxIds === 'string') {
              inTurn(async () => {
                if (!closed) ending = 'inbox_deleted'
                close()
              })
            }
          }),
        )
        const unsubscribe = () => {
          for (const stop of unsubscribes) stop()
        }
        const keepAlive = setInterval(() => send(': keep-alive\n\n'), KEEP_ALIVE_MS)
        close = () => {
          if (closed) return
          closed = true
          mine.delete(recheck)
          if (mine.size === 0 && this.rechecks.get(owner.userId) === mine) this.rechecks.delete(owner.userId)
          unsubscribe()
          clearInterval(keepAlive)
          signal.removeEventListener('abort', close)
          s.stopping.removeEventListener('abort', close)
          adjust(this.perUser, owner.userId, -1)
          adjust(this.perOrganization, owner.organizationId, -1)
          release()
          if (s.stopping.aborted) ending = 'shutdown'
          s.logger.info('console_stream_ended', {
            inbox_id: inboxId,
            user_id: owner.userId,
            reason: ending,
            open_ms: Math.round(performance.now() - openedAt),
          })
          try {
            controller.close()
          } catch {
            // already closed by the client going away
          }
        }
        signal.addEventListener('abort', close)
        s.stopping.addEventListener('abort', close)
        // Subscribed before this first event, so a page that re-reads on `ready` misses nothing
        // (in PostgreSQL mode, once the machine's LISTEN is active; a stream that cannot listen ends).
        s.notifier.ready().then(() => send(`retry: 3000\nevent: ready\ndata: ${inboxId}\n\n`), close)
        if (signal.aborted || s.stopping.aborted) close()
      },
      cancel: () => close(),
    })
    return new Response(body, {
      headers: {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        'x-accel-buffering': 'no',
      },
    })
  }
}

function adjust(counts: Map<string, number>, key: string, by: number): void {
  const next = (counts.get(key) ?? 0) + by
  if (next <= 0) counts.delete(key)
  else counts.set(key, next)
}
