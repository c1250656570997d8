/**
 * In-process "something changed in this inbox" signal. The SMTP side emits after the
 * message is committed; long polls listen. It carries no data: listeners re-query.
 *
 * It also keeps a version per inbox, bumped by every change to the inbox's messages in
 * the same synchronous step as the write, so a cached read can tell it is stale.
 *
 * This class is the SQLite mode's notifier (one process sees every write) and the local
 * fan-out of PostgreSQL mode's (src/app/postgres/notifier.ts), where the signals come from
 * the database's NOTIFY and `ready()` waits for the machine's LISTEN.
 */
import { EventEmitter } from 'node:events'

export type InboxEvent = 'message_stored' | 'inbox_deleted'

const ALWAYS_READY = Promise.resolve()

export interface SubscribeOptions {
  /**
   * Also hear this machine's own stored messages at once, before the database's NOTIFY brings
   * them back (PostgreSQL mode; in SQLite mode every event is heard once, at once). Such a
   * listener may hear one message twice, so only one that merely re-queries on every event
   * (a long poll) asks for it: the NOTIFY's hop through the database no longer stands between
   * the commit and its query.
   */
  early?: boolean
}

export class InboxNotifier {
  private readonly emitter = new EventEmitter()
  /** The listeners that asked to hear early (they are in `emitter` too). */
  private readonly early = new EventEmitter()
  private readonly versions = new Map<string, number>()

  constructor() {
    // One listener per waiting poll; thousands may wait on the same busy inbox.
    this.emitter.setMaxListeners(0)
    this.early.setMaxListeners(0)
  }

  emit(inboxId: string, event: InboxEvent): void {
    this.bump(inboxId)
    this.deliver(inboxId, event)
  }

  /** Marks the inbox's messages as changed (call inside the writing transaction). */
  bump(inboxId: string): void {
    this.versions.set(inboxId, (this.versions.get(inboxId) ?? 0) + 1)
  }

  /** Changes since start-up; only equality between two readings means anything. */
  version(inboxId: string): number {
    return this.versions.get(inboxId) ?? 0
  }

  /** Subscribes; returns the unsubscribe function. */
  subscribe(inboxId: string, listener: (event: InboxEvent) => void, options: SubscribeOptions = {}): () => void {
    this.emitter.on(inboxId, listener)
    if (options.early) this.early.on(inboxId, listener)
    return () => {
      this.emitter.off(inboxId, listener)
      if (options.early) this.early.off(inboxId, listener)
    }
  }

  /**
   * Resolves once a subscription made before it is sure to hear every later commit: at once
   * here (every write is this process's), when LISTEN is active in PostgreSQL mode. A waiter
   * subscribes, awaits this, then makes its first query: nothing committed after that query
   * goes unheard.
   */
  ready(): Promise<void> {
    return ALWAYS_READY
  }

  listenerCount(inboxId: string): number {
    return this.emitter.listenerCount(inboxId)
  }

  /**
   * A waiter of `inboxId` heard an event, looked, found nothing it wanted and waits on with the
   * same subscription. Nothing to do here; PostgreSQL mode tells the other machines again that
   * the inbox is watched (a long poll's announcement there lasts until one wake-up).
   */
  waitingAgain(_inboxId: string): void {}

  /** Listeners of `inboxId` that did not ask to hear early: the ones that stay for many events. */
  protected lastingCount(inboxId: string): number {
    return this.emitter.listenerCount(inboxId) - this.early.listenerCount(inboxId)
  }

  /** Hands the event to this process's listeners. */
  protected deliver(inboxId: string, event: InboxEvent): void {
    this.emitter.emit(inboxId, event)
  }

  /** Hands the event to the listeners that asked to hear early only. */
  protected deliverEarly(inboxId: string, event: InboxEvent): void {
    this.early.emit(inboxId, event)
  }

  /** Hands the event to the listeners that did not ask to hear early only. */
  protected deliverLasting(inboxId: string, event: InboxEvent): void {
    const early = this.early.listeners(inboxId)
    for (const listener of this.emitter.listeners(inboxId))
      if (!early.includes(listener)) (listener as (event: InboxEvent) => void)(event)
  }

  /** The inboxes someone listens to right now. */
  protected watched(): string[] {
    return this.emitter.eventNames().filter((name): name is string => typeof name === 'string')
  }
}
