/**
 * The time that decides what machines share: lease expiry (long-poll and live-view slots,
 * quota reservations), the UTC minute a request is counted in, and the month and five-minute
 * bucket a quota unit is held in. Machines whose clocks disagree must still agree on these:
 * with one machine 40 s behind, the other treated its leases as expired and let 20 long polls
 * in for a key limited to 10; with one 40 s ahead, alternating requests were counted in two
 * minutes and passed 120 a minute.
 *
 * So these times are this machine's clock corrected by its measured offset to the database's
 * clock (`clock_timestamp()`), which every machine shares: the offset is measured at start
 * and every OFFSET_INTERVAL_MS, as the database's time minus the middle of the local wall
 * clock before and after the query, keeping the sample with the shortest round trip. The
 * injected clock stays the base (tests move it by hand), so only the machine's error is
 * corrected, not the service's time. `received_at` and the other times keep the local clock.
 *
 * Only an offset of 1 s or more is corrected (below that the measurement's own error is of
 * the same size). The offset is a metric, logged once when it passes 1 s (and once when it is back within),
 * and past OFFSET_TOLERANCE_MS /ready fails: the times not corrected here (received_at,
 * sessions, retention) are then too far from the other machines'.
 */
import type { Clock } from '../../clock.ts'
import { errorFields, type Logger } from '../../log.ts'
import type { Sql } from '../../storage/postgres/client.ts'

const OFFSET_INTERVAL_MS = 15_000
const SAMPLES = 3
/** An offset this large is worth an operator's look (NTP keeps machines within milliseconds). */
const OFFSET_LOGGED_MS = 1_000
/** A third of the 30 s lease: past it the uncorrected times disagree by more than a heartbeat. */
const OFFSET_TOLERANCE_MS = 10_000

export class DatabaseClock implements Clock {
  private offset = 0
  private measured = false
  private logged = false
  private timer: ReturnType<typeof setInterval> | undefined

  constructor(
    private readonly base: Clock,
    private readonly sql: Sql,
    private readonly logger: Logger,
    /** The wall clock the offset is measured against (the process's own, which faketime or a bad NTP moves). */
    private readonly wall: () => number = () => Date.now(),
  ) {}

  now(): number {
    // Below a second the correction would be mostly the measurement's own error (half a
    // round trip): clocks NTP keeps are left as they are, and a rule at a minute's edge stays exact.
    return Math.abs(this.offset) < OFFSET_LOGGED_MS ? this.base.now() : this.base.now() + this.offset
  }

  /** The database's clock minus this machine's, in milliseconds; null before the first measurement. */
  get offsetMs(): number | null {
    return this.measured ? this.offset : null
  }

  /** /ready's `clock` check: failed past the tolerance, saying by how much. */
  readiness(): { check: 'ok' | 'failed'; failing?: string } {
    if (Math.abs(this.offset) <= OFFSET_TOLERANCE_MS) return { check: 'ok' }
    const seconds = (Math.abs(this.offset) / 1000).toFixed(1)
    return {
      check: 'failed',
      failing:
        `this machine's clock is ${seconds} s ${this.offset > 0 ? 'behind' : 'ahead of'} ` +
        `the database's (tolerance ${OFFSET_TOLERANCE_MS / 1000} s)`,
    }
  }

  /** Measures the offset now; a failure keeps the last one (the database may be away). */
  async measure(): Promise<void> {
    let best: { rtt: number; offset: number } | null = null
    try {
      for (let i = 0; i < SAMPLES; i++) {
        const before = this.wall()
        const [row] = await this.sql<
          { at: number }[]
        >`select (extract(epoch from clock_timestamp()) * 1000)::float8 as at`
        const after = this.wall()
        const sample = { rtt: after - before, offset: Number(row!.at) - (before + after) / 2 }
        if (!best || sample.rtt < best.rtt) best = sample
      }
    } catch (error) {
      if (!best) {
        this.logger.debug('database_clock_unmeasured', errorFields(error))
        return
      }
    }
    this.offset = Math.round(best!.offset)
    this.measured = true
    const large = Math.abs(this.offset) > OFFSET_LOGGED_MS
    if (large !== this.logged) {
      this.logged = large
      if (large)
        this.logger.warn('database_clock_offset', { offset_ms: this.offset, tolerance_ms: OFFSET_TOLERANCE_MS })
      else this.logger.info('database_clock_offset_ok', { offset_ms: this.offset })
    }
  }

  /** Measures every OFFSET_INTERVAL_MS until the returned stop is called. */
  watch(): () => void {
    this.timer = setInterval(() => void this.measure(), OFFSET_INTERVAL_MS)
    this.timer.unref?.()
    return () => clearInterval(this.timer)
  }
}
