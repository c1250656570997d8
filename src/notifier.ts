/**
 * In-process "something changed in this inbox" signal. The SMTP side emits after the
 * message is committed; long polls listen. It carries no data: listeners re-query.
 *
 * It also keeps a version per inbox, bumped by every change to the inbox's messages in
 * the same synchronous step as the write, so a cached read can tell it is stale.
 */
import { EventEmitter } from 'node:events'

type InboxEvent = 'message_stored' | 'inbox_deleted'

export class InboxNotifier {
  private readonly emitter = new EventEmitter()
  private readonly versions = new Map<string, number>()

  constructor() {
    // One listener per waiting poll; thousands may wait on the same busy inbox.
    this.emitter.setMaxListeners(0)
  }

  emit(inboxId: string, event: InboxEvent): void {
    this.bump(inboxId)
    this.emitter.emit(inboxId, event)
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
  subscribe(inboxId: string, listener: (event: InboxEvent) => void): () => void {
    this.emitter.on(inboxId, listener)
    return () => this.emitter.off(inboxId, listener)
  }

  listenerCount(inboxId: string): number {
    return this.emitter.listenerCount(inboxId)
  }
}
