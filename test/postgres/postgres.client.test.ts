/**
 * The behaviours of the PostgreSQL client (postgres.js) that PostgreSQL mode builds on,
 * checked against a real server rather than taken from its documentation: LISTEN on a
 * connection of its own, a hook on every (re)connection of that listener, pools that recover
 * by themselves after the server restarts, and a pool that never opens more than `max`.
 */
import { beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { openPostgres } from '../../src/storage/postgres/client.ts'
import { describeWithPostgres, freshDatabase, testCluster } from '../support/postgres.ts'
import { until } from '../support/wait.ts'

setDefaultTimeout(60_000)

/** Runs `query` until it succeeds; a pool's first query on a connection the restart killed fails once. */
async function eventually<T>(query: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await query()
    } catch (error) {
      if (attempt >= 5) throw error
      await Bun.sleep(100) // a pause before the retry, not a wait for a state
    }
  }
}

describeWithPostgres('the PostgreSQL client', () => {
  let url: string
  beforeAll(async () => {
    url = await freshDatabase()
  })

  test('LISTEN runs beside the pool: a notification arrives while every pooled connection is busy', async () => {
    const sql = openPostgres(url, { max: 1 })
    const sender = openPostgres(url, { max: 1 })
    try {
      const heard: string[] = []
      await sql.listen('probe', (payload) => heard.push(payload))
      // The pool's only connection waits for a lock the sender holds: busy until released. A
      // server process blocked like this delivers no notification, so hearing one proves LISTEN
      // runs on another connection.
      const holder = await sender.reserve()
      await holder`select pg_advisory_lock(42)`
      const busy = sql`select pg_advisory_lock(42)`.then(() => sql`select pg_advisory_unlock(42)`)
      await holder`select pg_notify('probe', 'while busy')`
      await until(() => heard.length > 0, 'the notification to be heard', { timeoutMs: 10_000 })
      await holder`select pg_advisory_unlock(42)`
      holder.release()
      await busy
      expect(heard).toEqual(['while busy'])
    } finally {
      await Promise.all([sql.end(), sender.end()])
    }
  })

  test('after the server restarts: the listener reconnects, calls its hook again and hears new notifications; the pool recovers', async () => {
    const sql = openPostgres(url, { max: 2 })
    const sender = openPostgres(url, { max: 1 })
    try {
      const heard: string[] = []
      let listens = 0
      await sql.listen(
        'probe',
        (payload) => heard.push(payload),
        () => {
          listens += 1
        },
      )
      expect(listens).toBe(1)
      await sql`select 1`
      testCluster().restart()
      await until(() => listens === 2, 'the client to listen again after the restart', { timeoutMs: 20_000 })
      await eventually(() => sender.notify('probe', 'after restart'))
      await until(() => heard.includes('after restart'), 'the notification sent after the restart to be heard')
      const [row] = await eventually(() => sql<{ ok: number }[]>`select 1 as ok`)
      expect(row!.ok).toBe(1)
    } finally {
      await Promise.all([sql.end(), sender.end()])
    }
  })

  test('a pool of 2 runs 8 concurrent queries on at most 2 server connections', async () => {
    const sql = openPostgres(url, { max: 2 })
    try {
      const rows = await Promise.all(Array.from({ length: 8 }, () => sql<{ pid: number }[]>`select pg_backend_pid() as pid, pg_sleep(0.1)`))
      const pids = new Set(rows.map(([row]) => row!.pid))
      expect(pids.size).toBeLessThanOrEqual(2)
      expect(pids.size).toBeGreaterThanOrEqual(1)
    } finally {
      await sql.end()
    }
  })
})
