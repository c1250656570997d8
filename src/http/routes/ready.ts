/**
 * GET /ready: private readiness for fly.toml's checks and load balancers (never in the
 * OpenAPI document; /health stays the spec's liveness answer). Ready means: the database
 * takes a write lock, the SMTP listener is listening, and, when a replica is configured,
 * Litestream is running (the server is its `-exec` child, so it is the parent process).
 */
import { readFileSync } from 'node:fs'
import { Elysia } from 'elysia'
import type { Services } from '../../core/services.ts'
import { errorFields } from '../../log.ts'

export interface ReadinessProbes {
  smtpListening(): boolean
}

type Check = 'ok' | 'failed' | 'not_configured'

/** The parent process's command name, from /proc (Linux; elsewhere: unknown). */
export function parentCommand(procRoot = '/proc', ppid = process.ppid): string | null {
  try {
    return readFileSync(`${procRoot}/${ppid}/comm`, 'utf8').trim()
  } catch {
    return null
  }
}

export function readinessChecks(s: Services, probes: ReadinessProbes, parent: () => string | null = parentCommand): Record<string, Check> {
  return { database: databaseWritable(s), smtp: probes.smtpListening() ? 'ok' : 'failed', litestream: litestreamCheck(s, parent) }
}

/**
 * Takes and drops the write lock: fails on a read-only file or a broken disk. Our own
 * transactions are synchronous, so none is open here; another process's write (the CLI) is
 * not waited for (busy means writable).
 */
function databaseWritable(s: Services): Check {
  const { sqlite } = s.storage
  const { timeout } = sqlite.query('PRAGMA busy_timeout').get() as { timeout: number }
  try {
    sqlite.exec('PRAGMA busy_timeout = 0')
    sqlite.exec('BEGIN IMMEDIATE')
    sqlite.exec('ROLLBACK')
    return 'ok'
  } catch (error) {
    if ((error as { code?: string }).code === 'SQLITE_BUSY') return 'ok'
    s.logger.warn('readiness_database_failed', { error: errorFields(error).error })
    return 'failed'
  } finally {
    sqlite.exec(`PRAGMA busy_timeout = ${Number(timeout)}`)
  }
}

function litestreamCheck(s: Services, parent: () => string | null): Check {
  if (s.config.litestreamReplica === 'none') return 'not_configured'
  return parent() === 'litestream' ? 'ok' : 'failed'
}

export const readyRoutes = (s: Services, probes: ReadinessProbes) =>
  new Elysia().get(
    '/ready',
    ({ set }) => {
      const checks = readinessChecks(s, probes)
      const ready = Object.values(checks).every((check) => check !== 'failed')
      set.status = ready ? 200 : 503
      set.headers['cache-control'] = 'no-store'
      return { status: ready ? 'ready' : 'not_ready', checks }
    },
    { detail: { hide: true } },
  )
