/**
 * GET /ready: private readiness for fly.toml's checks and load balancers (never in the
 * OpenAPI document; /health stays the spec's liveness answer). Ready means "a commit can
 * succeed now and backups are current": a real write commits (a heartbeat row, at most every
 * few seconds) and no write has failed since the last commit, the SMTP listener is listening,
 * and, when a replica is configured, Litestream is running (the server is its `-exec` child,
 * so it is the parent process) and the replica holds every write older than the lag bound;
 * with SMTP_PROXY_PROTOCOL=on, not every PROXY line of the last minute was refused.
 */
import { readFileSync } from 'node:fs'
import { Elysia } from 'elysia'
import type { Services } from '../../core/common/services.ts'
import { probeHeartbeatWrite } from '../../core/runtime/heartbeat.ts'

export interface ReadinessProbes {
  smtpListening(): boolean
  /**
   * PostgreSQL mode: whether the database takes a bounded real write now, and what failed
   * (app/postgres/database-probe.ts). Without it, the SQLite heartbeat write decides.
   */
  database?: () => Promise<{ check: 'ok' | 'failed'; failing?: string }>
  /**
   * With SMTP_PROXY_PROTOCOL=on: failed while every PROXY line of the last minute was refused
   * (TRUSTED_PROXIES misses the real proxy, so all inbound mail is refused).
   */
  proxyLines?: () => Check
  /**
   * PostgreSQL mode: whether this machine's clock is within
   * tolerance of the database's (app/postgres/database-clock.ts).
   */
  clock?: () => { check: 'ok' | 'failed'; failing?: string }
}

export type Check = 'ok' | 'failed' | 'not_configured'

/** The parent process's command name, from /proc (Linux; elsewhere: unknown). */
export function parentCommand(procRoot = '/proc', ppid = process.ppid): string | null {
  try {
    return readFileSync(`${procRoot}/${ppid}/comm`, 'utf8').trim()
  } catch {
    return null
  }
}

/** `database`: PostgreSQL mode's probe result, already awaited; the SQLite heartbeat write otherwise. */
export async function readinessChecks(
  s: Services,
  probes: ReadinessProbes,
  parent: () => string | null = parentCommand,
  heartbeat = new WriteProbe(),
  database?: Check,
): Promise<Record<string, Check>> {
  return {
    database: database ?? (await heartbeat.check(s)),
    smtp: probes.smtpListening() ? 'ok' : 'failed',
    litestream: litestreamCheck(s, parent),
    replication: s.replication ? (s.replication.current() ? 'ok' : 'failed') : 'not_configured',
    proxy_lines: probes.proxyLines?.() ?? 'not_configured',
  }
}

/**
 * How often /ready really writes while all is well; checks in between reuse the success (one fsync per 5 s at most).
 */
const WRITE_PROBE_INTERVAL_MS = 5_000

/**
 * A real write: upserts one heartbeat row and commits it (core's probeHeartbeatWrite).
 * Another process's write (the CLI) is not waited for: busy means writable, unless a real
 * write has already failed on the lock since the last commit.
 * The heartbeat also gives Litestream something to copy on an idle server, so a replica that
 * stopped taking writes shows as lag even when no mail arrives.
 */
export class WriteProbe {
  private lastAt = -Infinity
  private last: Check = 'ok'

  async check(s: Services): Promise<Check> {
    // Only a success is reused: while failing, every check writes again (a refused write costs
    // no fsync), and a write that failed elsewhere since the last commit (mail, an API call)
    // is checked at once instead of trusting a success from a few seconds ago.
    const fresh = performance.now() - this.lastAt < WRITE_PROBE_INTERVAL_MS
    if (fresh && this.last === 'ok' && s.storageHealth.failing === null) return 'ok'
    this.lastAt = performance.now()
    this.last = await this.write(s)
    return this.last
  }

  private async write(s: Services): Promise<Check> {
    const outcome = await probeHeartbeatWrite(s)
    // A lock held for a moment (the CLI) is writable. But once a real write has waited out
    // the whole busy timeout and failed, and nothing has committed since, the holder is
    // still there: the next commit would fail the same way, so this is not ready.
    if (outcome === 'busy') return s.storageHealth.failing === null ? 'ok' : 'failed'
    return outcome === 'committed' ? 'ok' : 'failed'
  }
}

function litestreamCheck(s: Services, parent: () => string | null): Check {
  if (s.config.litestreamReplica === 'none') return 'not_configured'
  return parent() === 'litestream' ? 'ok' : 'failed'
}

export const readyRoutes = (s: Services, probes: ReadinessProbes, heartbeat = new WriteProbe()) =>
  new Elysia().get(
    '/ready',
    async ({ set }) => {
      const database = probes.database ? await probes.database() : undefined
      const clock = probes.clock?.()
      const checks: Record<string, Check> = await readinessChecks(s, probes, parentCommand, heartbeat, database?.check)
      if (clock) checks.clock = clock.check
      const ready = Object.values(checks).every((check) => check !== 'failed')
      set.status = ready ? 200 : 503
      set.headers['cache-control'] = 'no-store'
      // The failing parts in words (PostgreSQL mode), for the operator reading /ready.
      const failing = {
        ...(database?.failing ? { database: database.failing } : {}),
        ...(clock?.failing ? { clock: clock.failing } : {}),
      }
      return { status: ready ? 'ready' : 'not_ready', checks, ...(Object.keys(failing).length > 0 ? { failing } : {}) }
    },
    { detail: { hide: true } },
  )
