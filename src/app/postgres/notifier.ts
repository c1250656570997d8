/**
 * PostgreSQL mode's inbox notifier. Mail stored on any machine wakes the long polls and live
 * views waiting on every machine: after the commit, a local `emit` of a stored message bumps
 * the version, reaches at once the listeners that asked to hear early (long polls, which
 * re-query on any event and so do not mind hearing it again), and queues the inbox for this
 * machine's next coalesced NOTIFY (the wake publisher; the storing transaction sends none)
 * when another machine has announced a listener on it (remote-watches.ts: this machine
 * announces its own listeners' inboxes the same way, at the first and once a second; an inbox
 * only long polls watch is announced for one publication, and again by a poll that waits on
 * after a wake-up: `waitingAgain`).
 * This machine's one LISTEN connection (the wake bus) hands each notification to the local
 * listeners, this machine's own publications included: the other listeners hear it there,
 * once, as the other machines' listeners do. A store it does not publish, they hear at once.
 *
 * A publication can be lost (this machine dies after the commit, the database goes away, a
 * LISTEN connection elsewhere is down): every machine's fallback re-reads the inboxes it
 * watches once a second (wake-fallback.ts) and tells the listeners of any that changed.
 *
 * An inbox deletion is not notified by storage; `emit` sends it after the commit. Should that
 * fail (the database just went away), the local listeners still hear it at once; the other
 * machines' waiters hear it by their fallback's next reading (the inbox is gone).
 *
 * After the LISTEN connection comes back, every local listener is told `message_stored` once
 * (a notification sent during the outage is lost, not queued): each re-queries.
 *
 * The bus also carries the console's ended accesses (`accessEnded`): a sign-out or a removal
 * on one machine ends the user's live views on every machine at once, not at their next
 * keep-alive. After a lost connection every live view checks its access once. And it carries
 * the refused deliveries each machine keeps for the inbox pages (`refusals`), tagged with the
 * machine that refused them so it does not keep them twice.
 */
import type { Logger } from '../../log.ts'
import { errorFields } from '../../log.ts'
import { type InboxEvent, InboxNotifier, type SubscribeOptions } from '../../notifier.ts'
import type { Sql } from '../../storage/postgres/client.ts'
import type { AccessEnded } from '../../console/live-streams.ts'
import type { RefusalNews, RefusalsShared } from '../../core/inbound/refused-deliveries.ts'
import {
  createWakeBus,
  MAX_REFUSAL_BYTES,
  newestPerInbox,
  notifyAccessEnded,
  notifyInbox,
  notifyRefusal,
  publishStored,
  publishWatching,
  type WakeBus,
} from '../../storage/postgres/wake-bus.ts'
import { createWakePublisher, type WakePublisher } from '../../storage/postgres/wake-publisher.ts'
import {
  createRemoteWatches,
  type RemoteWatches,
  WATCH_BLIND_MS,
  WATCH_REFRESH_MS,
  WATCH_TTL_MS,
} from './remote-watches.ts'
import { startWakeFallback, WAKE_RECHECK_MS, type WakeFallback } from './wake-fallback.ts'

export interface PostgresNotifierOptions {
  /**
   * Publish this machine's stored messages (DATABASE_WAKE_PUBLISH); off, the others hear them by their fallback only.
   */
  publish?: boolean
  /** The fallback's interval; tests shorten it. */
  recheckMs?: number
  /** How long another machine's announcement that it watches an inbox counts (remote-watches.ts); tests shorten it. */
  watchTtlMs?: number
  /**
   * How often this machine announces again what it watches (a third of the ttl); tests that
   * count announcements push it away.
   */
  watchRefreshMs?: number
}

export class PostgresInboxNotifier extends InboxNotifier {
  readonly bus: WakeBus
  readonly publisher: WakePublisher
  readonly fallback: WakeFallback
  /** This machine's announcements of the inboxes it watches, coalesced like its publications. */
  readonly announcer: WakePublisher
  /** What the other machines watch: a stored message is published only when one of them does. */
  private readonly remoteWatches: RemoteWatches
  private readonly refreshTimer: ReturnType<typeof setInterval>
  private readonly publishing: boolean
  /** The console's live views hear here whose access ended on any machine (null: anyone's may have). */
  private readonly accessListeners = new Set<(userId: string | null) => void>()
  readonly accessEnded: AccessEnded = {
    announce: (userId) => {
      notifyAccessEnded(this.sql, userId).catch((error: unknown) => {
        // This machine's own views were rechecked already; the others' notice within a keep-alive.
        this.logger.warn('access_notify_failed', { user_id: userId, ...errorFields(error) })
      })
    },
    listen: (listener) => {
      this.accessListeners.add(listener)
    },
  }
  private readonly refusalListeners = new Set<(news: RefusalNews) => void>()
  readonly refusals: RefusalsShared = {
    announce: (news) => {
      const body = JSON.stringify({ origin: this.origin, news })
      // Bounded fields make this unreachable; a debugging aid is not worth an error
      if (Buffer.byteLength(body) > MAX_REFUSAL_BYTES) return
      notifyRefusal(this.sql, body).catch((error: unknown) =>
        this.logger.warn('refusal_notify_failed', { kind: news.kind, ...errorFields(error) }),
      )
    },
    listen: (listener) => {
      this.refusalListeners.add(listener)
    },
  }

  /** `origin` names this machine in what it announces (its lease holder name). */
  constructor(
    private readonly sql: Sql,
    private readonly logger: Logger,
    private readonly origin: string,
    options: PostgresNotifierOptions = {},
  ) {
    super()
    this.publishing = options.publish ?? true
    this.publisher = createWakePublisher(
      (inboxIds) => publishStored(sql, inboxIds),
      (error, inboxes) => logger.warn('wake_publish_failed', { inboxes, ...errorFields(error) }),
    )
    const watchTtlMs = options.watchTtlMs ?? WATCH_TTL_MS
    const refreshMs = Math.min(WATCH_REFRESH_MS, watchTtlMs / 3)
    this.remoteWatches = createRemoteWatches(watchTtlMs, (refreshMs * WATCH_BLIND_MS) / WATCH_REFRESH_MS)
    this.announcer = createWakePublisher(
      (inboxIds) => publishWatching(sql, origin, this.watchKinds(inboxIds)),
      // Missed announcements cost the waiters here their fallback interval; the next refresh retries.
      (error, inboxes) => logger.debug('watch_announce_failed', { inboxes, ...errorFields(error) }),
    )
    // An announcement counts for watchTtlMs elsewhere: renewed three times within it.
    this.refreshTimer = setInterval(() => this.announceWatched(), options.watchRefreshMs ?? refreshMs)
    this.refreshTimer.unref?.()
    this.fallback = startWakeFallback(
      {
        watched: () => this.watched(),
        read: (inboxIds) => newestPerInbox(sql, inboxIds),
        deliver: (inboxId, event) => this.deliver(inboxId, event),
        // The database is away: storage_failing says so, and LISTEN's return wakes everyone.
        onError: (error) => logger.debug('wake_recheck_failed', errorFields(error)),
      },
      options.recheckMs ?? WAKE_RECHECK_MS,
    )
    this.bus = createWakeBus(sql, {
      onWake: (inboxId, event) => this.deliver(inboxId, event),
      onListening: () => {
        // Announcements made while this connection was down went unheard here: publish
        // everything until the others' refreshes have been heard again; and this machine's
        // own announcements may have failed meanwhile: make them again.
        this.remoteWatches.blind(performance.now())
        this.announceWatched()
      },
      onWatching: (from, inboxIds, once) => {
        if (from === this.origin || !this.publishing) return
        for (const inboxId of this.remoteWatches.heard(inboxIds, performance.now(), once))
          this.publisher.publish(inboxId)
      },
      onReconnect: () => {
        const inboxes = this.watched()
        logger.info('wake_bus_reconnected', { listening_inboxes: inboxes.length })
        for (const inboxId of inboxes) this.deliver(inboxId, 'message_stored')
        for (const listener of this.accessListeners) listener(null)
      },
      onAccessEnded: (userId) => {
        for (const listener of this.accessListeners) listener(userId)
      },
      onRefusal: (body) => {
        const heard = parseRefusal(body)
        if (!heard || heard.origin === this.origin) return
        for (const listener of this.refusalListeners) listener(heard.news)
      },
    })
  }

  override emit(inboxId: string, event: InboxEvent): void {
    this.bump(inboxId)
    if (event === 'message_stored') {
      // Emitted after the commit: a long poll's query may start now, without waiting for the
      // NOTIFY's hop through the database (which brings it back to every listener here).
      this.deliverEarly(inboxId, event)
      // Remembered even when not published: a watcher announced later still gets it.
      if (this.remoteWatches.stored(inboxId, performance.now()) && this.publishing) this.publisher.publish(inboxId)
      // Unpublished, no NOTIFY brings it back here: the other listeners here hear it now, not
      // at the fallback's next reading. Published later after all (a late announcement), they
      // hear it once more, and only re-read.
      else this.deliverLasting(inboxId, event)
      return
    }
    notifyInbox(this.sql, inboxId, event).catch((error: unknown) => {
      this.logger.warn('wake_notify_failed', { inbox_id: inboxId, inbox_event: event, ...errorFields(error) })
      this.deliver(inboxId, event)
    })
  }

  /**
   * A first listener on an inbox here: the other machines are told to publish its wake-ups from
   * now on; so is a first lasting one (its watch is no longer used up by a wake-up).
   */
  override subscribe(
    inboxId: string,
    listener: (event: InboxEvent) => void,
    options: SubscribeOptions = {},
  ): () => void {
    const announce = this.listenerCount(inboxId) === 0 || (!options.early && this.lastingCount(inboxId) === 0)
    const unsubscribe = super.subscribe(inboxId, listener, options)
    if (announce) this.announcer.publish(inboxId)
    return unsubscribe
  }

  /** A long poll waits on after a wake-up, which may have used up its inbox's once-watch elsewhere. */
  override waitingAgain(inboxId: string): void {
    if (this.lastingCount(inboxId) === 0) this.announcer.publish(inboxId)
  }

  /**
   * How to announce `inboxIds`, as they are listened to when the announcement goes out: lasting
   * while a live view (a listener that does not hear early) stays; otherwise once, because the
   * long polls there end at their first wake-up, or announce themselves again (remote-watches.ts).
   */
  private watchKinds(inboxIds: string[]): { lasting: string[]; once: string[] } {
    const lasting: string[] = []
    const once: string[] = []
    for (const inboxId of inboxIds) (this.lastingCount(inboxId) > 0 ? lasting : once).push(inboxId)
    return { lasting, once }
  }

  /** Whether a message stored into `inboxId` now would be published (another machine watches it, or blind time). */
  publishesFor(inboxId: string): boolean {
    return this.publishing && this.remoteWatches.publishes(inboxId, performance.now())
  }

  private announceWatched(): void {
    for (const inboxId of this.watched()) this.announcer.publish(inboxId)
  }

  override ready(): Promise<void> {
    return this.bus.ready()
  }

  async close(): Promise<void> {
    this.fallback.stop()
    clearInterval(this.refreshTimer)
    await this.announcer.flush()
    // What this machine stored last still reaches the others at once, not by their fallback.
    await this.publisher.flush()
    await this.bus.close()
  }
}

/** A refusal announcement, or null for anything malformed (the channel is ours, but a payload is still checked). */
function parseRefusal(body: string): { origin: string; news: RefusalNews } | null {
  let value: { origin?: unknown; news?: Record<string, unknown> }
  try {
    value = JSON.parse(body)
  } catch {
    return null
  }
  const news = value.news
  if (typeof value.origin !== 'string' || !news || typeof news !== 'object') return null
  const text = (key: string) => typeof news[key] === 'string'
  const entry = news.entry as Record<string, unknown> | undefined
  const entryOk =
    !!entry && typeof entry.at === 'number' && typeof entry.sender === 'string' && typeof entry.reply === 'string'
  const ok =
    (news.kind === 'inbox' && text('inboxId') && entryOk) ||
    (news.kind === 'address' && text('address') && entryOk) ||
    (news.kind === 'claim' && text('address') && text('inboxId'))
  return ok ? { origin: value.origin, news: news as unknown as RefusalNews } : null
}
