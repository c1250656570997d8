/**
 * In-process "something changed in this inbox" signal. The SMTP side emits after the
 * message is committed; long polls listen. It carries no data: listeners re-query.
 */
import { EventEmitter } from 'node:events'

export type InboxEvent = 'message_stored' | 'inbox_deleted'

export class InboxNotifier {
  private readonly emitter = new EventEmitter()

  constructor() {
    // One listener per waiting poll; thousands may wait on the same busy inbox.
    this.emitter.setMaxListeners(0)
  }

  emit(inboxId: string, event: InboxEvent): void {
    this.emitter.emit(inboxId, event)
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
