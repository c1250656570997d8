/**
 * Whether the database can take mail now, for /ready in PostgreSQL mode. A `select 1` is not
 * enough: a database whose disk is full, or whose `messages` table someone holds locked,
 * answers it while every message gets 451. So the probe does a real, bounded write, as the
 * SQLite heartbeat does: one transaction that takes, table by table, the lock storing mail
 * takes (ROW EXCLUSIVE on each table mail writes), upserts one heartbeat row and commits,
 * under a short lock_timeout and statement_timeout so a held lock fails it in about a second
 * instead of hanging. A failure names the part that failed ("lock on messages: ...").
 *
 * A success may end a failing storage state and a failure begins one (storage-health.ts: as
 * the probe's work); while the state lasts a timer asks again every few seconds, so recovery
 * is noticed and logged without waiting for a request.
 */
import type { StorageHealth } from '../../core/runtime/storage-health.ts'
import type { Sql } from '../../storage/postgres/client.ts'

/** Longer than a healthy round trip on a busy machine, far shorter than a load balancer's check timeout. */
const PROBE_TIMEOUT_MS = 2_000
/** A lock mail needs, held longer than this by someone else, fails the probe. */
const LOCK_TIMEOUT_MS = 1_000
const STATEMENT_TIMEOUT_MS = 1_500
const WATCH_INTERVAL_MS = 3_000

/**
 * The tables that storing a message (and admitting it at RCPT TO) writes, in the order the
 * probe locks them. ROW EXCLUSIVE is what an INSERT or UPDATE takes: it waits only for a
 * lock that would block mail too (LOCK TABLE, ALTER TABLE, a VACUUM FULL), never for mail.
 */
const MAIL_TABLES = [
  'messages',
  'message_contents',
  'message_search_texts',
  'message_sources',
  'attachments',
  'attachment_contents',
  'quota_reservations',
  'monthly_email_usage',
  'inbound_bursts',
] as const

/** A probe that took too long: the database is as good as unreachable. */
class ProbeTimeout extends Error {
  readonly code = 'PROBE_TIMEOUT'
  constructor() {
    super(`the database did not answer within ${PROBE_TIMEOUT_MS} ms`)
    this.name = 'ProbeTimeout'
  }
}

export interface ProbeResult {
  check: 'ok' | 'failed'
  /** What failed, for /ready's body: the part and the database's own message. */
  failing?: string
}

export class DatabaseProbe {
  private timer: ReturnType<typeof setInterval> | undefined

  constructor(
    private readonly sql: Sql,
    private readonly health: StorageHealth,
  ) {}

  async check(): Promise<ProbeResult> {
    let timeout: ReturnType<typeof setTimeout> | undefined
    let part = 'connection'
    try {
      await Promise.race([
        this.sql.begin(async (tx) => {
          part = 'timeouts'
          await tx`
            select set_config('lock_timeout', ${`${LOCK_TIMEOUT_MS}ms`}, true),
              set_config('statement_timeout', ${`${STATEMENT_TIMEOUT_MS}ms`}, true)`
          for (const table of MAIL_TABLES) {
            part = `lock on ${table}`
            await tx.unsafe(`lock table ${table} in row exclusive mode`)
          }
          part = 'heartbeat write'
          await tx`
            insert into settings (name, value) values ('readiness_heartbeat', ${new Date().toISOString()})
            on conflict (name) do update set value = excluded.value`
          part = 'commit'
        }),
        new Promise((_, reject) => {
          timeout = setTimeout(() => reject(new ProbeTimeout()), PROBE_TIMEOUT_MS)
        }),
      ])
      this.health.committed('probe')
      // A small write fits where a message may not: while storing mail meets a full disk, not ready.
      if (this.health.full) return { check: 'failed', failing: 'storing mail: the database reports its disk full' }
      return { check: 'ok' }
    } catch (error) {
      this.health.failed(error, 'probe')
      const code = (error as { code?: unknown }).code
      return {
        check: 'failed',
        failing:
          `${part}: ${error instanceof Error ? error.message : String(error)}` +
          (typeof code === 'string' ? ` (${code})` : ''),
      }
    } finally {
      clearTimeout(timeout)
    }
  }

  /** Probes while storage is failing; returns the stop function. */
  watch(): () => void {
    let running = false
    this.timer = setInterval(() => {
      if (running || this.health.failing === null) return
      running = true
      this.check().finally(() => {
        running = false
      })
    }, WATCH_INTERVAL_MS)
    this.timer.unref?.()
    return () => clearInterval(this.timer)
  }
}
