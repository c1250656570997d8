/**
 * PostgreSQL mode's inbox notifier. Mail stored on any machine wakes the long polls and live
 * views waiting on every machine: the storing transaction sends NOTIFY (delivered at commit),
 * and this machine's one LISTEN connection (the wake bus) hands each notification to the
 * local listeners, this machine's own writes included. So a local `emit` of a stored message
 * bumps the version and reaches only the listeners that asked to hear early (long polls,
 * which re-query on any event and so do not mind hearing it again): the others hear it
 * through the bus, once, as the other machines' listeners do.
 *
 * An inbox deletion is not notified by storage; `emit` sends it after the commit. Should that
 * fail (the database just went away), the local listeners still hear it at once; the other
 * machines' waiters then find no message until their deadline.
 *
 * After the LISTEN connection comes back, every local listener is told `message_stored` once
 * (a notification sent during the outage is lost, not queued): each re-queries.
 */
import type { Logger } from '../../log.ts'
import { errorFields } from '../../log.ts'
import { type InboxEvent, InboxNotifier } from '../../notifier.ts'
import type { Sql } from '../../storage/postgres/client.ts'
import { createWakeBus, notifyInbox, type WakeBus } from '../../storage/postgres/wake-bus.ts'

export class PostgresInboxNotifier extends InboxNotifier {
  readonly bus: WakeBus

  constructor(
    private readonly sql: Sql,
    private readonly logger: Logger,
  ) {
    super()
    this.bus = createWakeBus(sql, {
      onWake: (inboxId, event) => this.deliver(inboxId, event),
      onReconnect: () => {
        const inboxes = this.watched()
        logger.info('wake_bus_reconnected', { listening_inboxes: inboxes.length })
        for (const inboxId of inboxes) this.deliver(inboxId, 'message_stored')
      },
    })
  }

  override emit(inboxId: string, event: InboxEvent): void {
    this.bump(inboxId)
    if (event === 'message_stored') {
      // Emitted after the commit: a long poll's query may start now, without waiting for the
      // NOTIFY's hop through the database (which brings it back to every listener here).
      this.deliverEarly(inboxId, event)
      return
    }
    notifyInbox(this.sql, inboxId, event).catch((error: unknown) => {
      this.logger.warn('wake_notify_failed', { inbox_id: inboxId, event, ...errorFields(error) })
      this.deliver(inboxId, event)
    })
  }

  override ready(): Promise<void> {
    return this.bus.ready()
  }

  close(): Promise<void> {
    return this.bus.close()
  }
}
