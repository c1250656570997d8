/**
 * The behaviours of the PostgreSQL client (postgres.js) that PostgreSQL mode builds on,
 * checked against a real server rather than taken from its documentation: LISTEN on a
 * connection of its own, a hook on every (re)connection of that listener, pools that recover
 * by themselves after the server restarts, a pool that never opens more than `max`, and a
 * connection reset just after its handshake that reaches only the query that was waiting.
 */
import { beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import type { Socket } from 'bun'
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

/**
 * A relay to `target` that resets each connection at the client's first message after the
 * server's first ReadyForQuery ('Z'): the moment a freshly opened connection sends its first
 * statement, whichever that is.
 */
function resetAfterHandshake(target: URL): { port: number; stop(): void } {
  interface Pair {
    upstream: Socket<undefined> | null
    /** Client bytes that arrived before the upstream connection opened. */
    early: Uint8Array[]
    ready: boolean
    /** Server bytes not yet split into whole messages (type byte, 4-byte length, body). */
    seen: Buffer
  }
  const listener = Bun.listen<Pair>({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      open(client) {
        const pair: Pair = { upstream: null, early: [], ready: false, seen: Buffer.alloc(0) }
        client.data = pair
        Bun.connect<undefined>({
          hostname: target.hostname,
          port: Number(target.port),
          socket: {
            open(upstream) {
              pair.upstream = upstream
              for (const chunk of pair.early) upstream.write(chunk)
            },
            data(_upstream, chunk) {
              pair.seen = Buffer.concat([pair.seen, chunk])
              while (pair.seen.length >= 5 && pair.seen.length >= 1 + pair.seen.readUInt32BE(1)) {
                if (pair.seen[0] === 0x5a) pair.ready = true
                pair.seen = pair.seen.subarray(1 + pair.seen.readUInt32BE(1))
              }
              client.write(chunk)
            },
            close() {
              client.end()
            },
          },
        }).catch(() => client.end())
      },
      data(client, chunk) {
        const pair = client.data
        if (pair.ready) {
          client.terminate()
          pair.upstream?.terminate()
          return
        }
        if (pair.upstream) pair.upstream.write(chunk)
        else pair.early.push(new Uint8Array(chunk))
      },
      close(client) {
        client.data?.upstream?.end()
      },
    },
  })
  return { port: listener.port, stop: () => listener.stop(true) }
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

  test('a connection reset right after its handshake fails only the waiting query: nothing else rejects unheard', async () => {
    // The client's own first statement on a new connection used to be an array-type lookup
    // whose failure nobody handled: the reset then also surfaced as an unhandled ECONNRESET,
    // which fails this test (and would reach a server's last-resort handler).
    const relay = resetAfterHandshake(new URL(url))
    const relayed = new URL(url)
    relayed.hostname = '127.0.0.1'
    relayed.port = String(relay.port)
    const sql = openPostgres(relayed.href, { max: 1 })
    try {
      const error = await sql`select 1`.then(
        () => null,
        (e: unknown) => e,
      )
      expect(error).toMatchObject({ code: 'ECONNRESET' })
      // A turn of the event loop, so that a rejection nobody handled is reported inside this test.
      await new Promise((resolve) => setImmediate(resolve))
    } finally {
      await sql.end({ timeout: 1 })
      relay.stop()
    }
  })
})
