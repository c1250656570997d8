/**
 * Whether the database answers, for /ready in PostgreSQL mode: `select 1` within a short
 * timeout. A success ends a failing storage state (logged once with how much it refused, as
 * a commit ends it in SQLite mode), a failure begins one; while the state lasts a timer asks
 * again every few seconds, so recovery is noticed and logged without waiting for a request.
 */
import type { StorageHealth } from '../../core/storage-health.ts'
import type { Sql } from '../../storage/postgres/client.ts'

/** Longer than a healthy round trip on a busy machine, far shorter than a load balancer's check timeout. */
export const PROBE_TIMEOUT_MS = 2_000
const WATCH_INTERVAL_MS = 3_000

/** A probe that took too long: the database is as good as unreachable. */
export class ProbeTimeout extends Error {
  readonly code = 'PROBE_TIMEOUT'
  constructor() {
    super(`the database did not answer within ${PROBE_TIMEOUT_MS} ms`)
    this.name = 'ProbeTimeout'
  }
}

export class DatabaseProbe {
  private timer: ReturnType<typeof setInterval> | undefined

  constructor(
    private readonly sql: Sql,
    private readonly health: StorageHealth,
  ) {}

  async check(): Promise<'ok' | 'failed'> {
    let timeout: ReturnType<typeof setTimeout> | undefined
    try {
      await Promise.race([
        this.sql`select 1`,
        new Promise((_, reject) => {
          timeout = setTimeout(() => reject(new ProbeTimeout()), PROBE_TIMEOUT_MS)
        }),
      ])
      this.health.committed()
      return 'ok'
    } catch (error) {
      this.health.failed(error)
      return 'failed'
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
