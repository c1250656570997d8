/**
 * The behaviours of the PostgreSQL client (postgres.js) that PostgreSQL mode builds on,
 * checked against a real server rather than taken from its documentation: LISTEN on a
 * connection of its own, a hook on every (re)connection of that listener, pools that recover
 * by themselves after the server restarts, a pool that never opens more than `max`, a
 * connection reset just after its handshake that reaches only the query that was waiting, and
 * the database going away (`support/tcp-cut.ts`): every query fails promptly, none waits
 * forever, and the pool connects again cleanly once it is back (patches/postgres@3.4.9.patch);
 * the database going silent (the same relay holding every byte): a statement sent into the
 * silence fails at the statement timeout plus a margin, its connection replaced, and LISTEN,
 * with nothing pending, is left alone.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import type { Socket } from 'bun'
import { openPostgres, SILENCE_MARGIN_MS } from '../../src/storage/postgres/client.ts'
import { describeWithPostgres, freshDatabase, ownCluster, type TestCluster } from '../support/postgres.ts'
import { tcpCut } from '../support/tcp-cut.ts'
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

/** A server's ErrorResponse of severity FATAL (the PostgreSQL protocol's 'E' message). */
function fatalResponse(code: string, message: string): Uint8Array {
  const fields = ['SFATAL', 'VFATAL', `C${code}`, `M${message}`].map((field) => `${field}\0`).join('') + '\0'
  const body = Buffer.from(fields, 'utf8')
  const head = Buffer.alloc(5)
  head.write('E', 0)
  head.writeInt32BE(body.length + 4, 1)
  return Buffer.concat([head, body])
}

describeWithPostgres('the PostgreSQL client', () => {
  // A cluster of this file's own: a test restarts it, and the run's cluster serves other files
  // at the same time.
  let cluster: TestCluster
  let url: string
  beforeAll(async () => {
    cluster = ownCluster()
    url = await freshDatabase(cluster)
  })
  afterAll(() => cluster.stop())

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
      cluster.restart()
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
      const rows = await Promise.all(
        Array.from({ length: 8 }, () => sql<{ pid: number }[]>`select pg_backend_pid() as pid, pg_sleep(0.1)`),
      )
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
  /** The outcome of a query and how long it took to come, capped at `capMs` (then 'no answer'). */
  async function outcome(query: Promise<unknown>, capMs = 8_000): Promise<{ result: string; ms: number }> {
    const began = performance.now()
    const result = await Promise.race([
      query.then(
        () => 'ok',
        (e: { code?: string }) => e.code ?? 'error',
      ),
      Bun.sleep(capMs).then(() => 'no answer'),
    ])
    return { result, ms: performance.now() - began }
  }

  test('the database cut off: every query fails promptly, however many wait; once it is back every connection opens', async () => {
    // A cut relay accepts each new connection and closes it before the server's first answer,
    // as a proxy in front of a database that is down does. The client used to retry such a
    // connection forever with its query held (the query never answered), to keep a query handed
    // to a connection between its socket's error and its close waiting forever, to make queries
    // that waited for a connection wait for attempts one at a time behind a backoff growing to
    // 20 s, and, once the database was back, to open a connection with bytes left from the
    // closed one whose start-up message was never sent (a connect timeout 5 s later).
    const direct = new URL(url)
    const relay = tcpCut(direct.hostname, Number(direct.port))
    const relayed = new URL(url)
    relayed.port = String(relay.port)
    const sql = openPostgres(relayed.href, { max: 4 })
    try {
      for (let round = 0; round < 2; round++) {
        const opened = await Promise.all([1, 2, 3, 4].map(() => outcome(sql`select pg_sleep(0.05)`)))
        expect(opened.map((o) => o.result)).toEqual(['ok', 'ok', 'ok', 'ok'])
        relay.cut()
        const oneByOne: { result: string; ms: number }[] = []
        for (let i = 0; i < 12; i++) oneByOne.push(await outcome(sql`select 1`))
        expect(oneByOne.filter((o) => !['ECONNRESET', 'CONNECTION_CLOSED'].includes(o.result))).toEqual([])
        // The backoff is 50 ms doubling to 1 s (client.ts); the bound adds room for a busy machine.
        expect(Math.max(...oneByOne.map((o) => o.ms))).toBeLessThan(3_000)
        const together = await Promise.all(Array.from({ length: 40 }, () => outcome(sql`select 1`)))
        expect(new Set(together.map((o) => o.result))).toEqual(new Set(['CONNECTION_CLOSED']))
        expect(Math.max(...together.map((o) => o.ms))).toBeLessThan(3_000)
        relay.restore()
      }
      const after = await Promise.all([1, 2, 3, 4].map(() => outcome(sql`select pg_sleep(0.05)`)))
      expect(after.map((o) => o.result)).toEqual(['ok', 'ok', 'ok', 'ok'])
      expect(Math.max(...after.map((o) => o.ms))).toBeLessThan(3_000)
    } finally {
      relay.restore()
      await sql.end({ timeout: 1 })
      relay.stop()
    }
  })
  test('a start refused after another connection got through: its query goes to the working connection instead of failing', async () => {
    // After a restart, an attempt begun while the database was down can be refused after a
    // new connection has already succeeded (through a proxy, or on a busy machine): /ready
    // said 200 from the working connection, and the query handed to the stale attempt answered
    // 500. Such a query, and those waiting for a connection, now run on the working one.
    const direct = new URL(url)
    const relay = tcpCut(direct.hostname, Number(direct.port))
    const relayed = new URL(url)
    relayed.port = String(relay.port)
    const sql = openPostgres(relayed.href, { max: 3 })
    try {
      expect((await outcome(sql`select 1`)).result).toBe('ok')
      relay.refuseNew(150)
      // The working connection is busy; the next queries start the other two, both refused.
      const busy = outcome(sql`select pg_sleep(0.3)`)
      const waiting = await Promise.all([1, 2, 3, 4].map(() => outcome(sql`select 2 as two`)))
      expect(waiting.map((o) => o.result)).toEqual(['ok', 'ok', 'ok', 'ok'])
      expect((await busy).result).toBe('ok')
      // No connection works: a refused start still fails its query at once.
      await sql.end({ timeout: 1 })
      const alone = openPostgres(relayed.href, { max: 2 })
      try {
        const refused = await outcome(alone`select 1`)
        expect(refused.result).toBe('CONNECTION_CLOSED')
        expect(refused.ms).toBeLessThan(3_000)
      } finally {
        await alone.end({ timeout: 1 })
      }
    } finally {
      relay.stop()
      await sql.end({ timeout: 1 })
    }
  })

  test('a start the server ends by terminating its backend is tried once more, on a new connection', async () => {
    // A postmaster killed -9 while it forked a backend leaves that backend to answer the
    // start-up with FATAL 57P01 "terminating connection due to unexpected postmaster exit",
    // even after the new server took its first connections: the query it was for ran nowhere.
    const direct = new URL(url)
    const relay = tcpCut(direct.hostname, Number(direct.port))
    const relayed = new URL(url)
    relayed.port = String(relay.port)
    const sql = openPostgres(relayed.href, { max: 2 })
    try {
      relay.replyNew(fatalResponse('57P01', 'terminating connection due to unexpected postmaster exit'), 1)
      expect((await outcome(sql`select 1`)).result).toBe('ok')
      // Every start ended so: once more, then the error, promptly; never a loop.
      await sql.end({ timeout: 1 })
      const doomed = openPostgres(relayed.href, { max: 2 })
      try {
        relay.replyNew(fatalResponse('57P01', 'terminating connection due to administrator command'), 1_000)
        const ended = await outcome(doomed`select 1`)
        expect(ended.result).toBe('57P01')
        expect(ended.ms).toBeLessThan(3_000)
      } finally {
        await doomed.end({ timeout: 1 })
      }
    } finally {
      relay.stop()
      await sql.end({ timeout: 1 })
    }
  })

  test("a path gone silent under open connections: their statements fail at the statement timeout plus the margin; LISTEN stays and hears what was held; a slow statement is the server's 57014", async () => {
    const direct = new URL(url)
    const relay = tcpCut(direct.hostname, Number(direct.port))
    const relayed = new URL(url)
    relayed.port = String(relay.port)
    const statementTimeoutMs = 500
    const sql = openPostgres(relayed.href, { max: 2, statementTimeoutMs })
    const sender = openPostgres(url, { max: 1 })
    const heard: string[] = []
    try {
      await sql.listen('silence_test', (payload) => heard.push(payload))
      // A reachable server answers a statement past the timeout with its own error, on a connection that stays.
      expect((await outcome(sql`select pg_sleep(2)`)).result).toBe('57014')
      expect(
        (await Promise.all([outcome(sql`select pg_sleep(0.05)`), outcome(sql`select pg_sleep(0.05)`)])).map(
          (o) => o.result,
        ),
      ).toEqual(['ok', 'ok'])

      relay.silence()
      const deadline = statementTimeoutMs + SILENCE_MARGIN_MS
      // Without the deadline these waited until the OS gave the connection up: 'no answer' within the cap.
      const answers = await Promise.all(Array.from({ length: 4 }, () => outcome(sql`select 1`, 20_000)))
      // On an open connection: CONNECTION_SILENT at the deadline. One that waited for a new
      // connection (the relay accepts, the start-up goes unanswered): the connect timeout, 5 s.
      expect(answers.filter((o) => !['CONNECTION_SILENT', 'CONNECT_TIMEOUT'].includes(o.result))).toEqual([])
      const silent = answers.filter((o) => o.result === 'CONNECTION_SILENT')
      expect(silent.length).toBeGreaterThanOrEqual(1)
      expect(Math.min(...silent.map((o) => o.ms))).toBeGreaterThanOrEqual(deadline - 50)
      expect(Math.max(...answers.map((o) => o.ms))).toBeLessThan(9_000)
      await sender.notify('silence_test', 'held')

      relay.restore()
      // The LISTEN connection had nothing pending: it was left alone, and the notification
      // held on the silent path reaches it once the path is back.
      await until(() => heard.includes('held'), 'the held notification', { timeoutMs: 10_000 })
      const after = await Promise.all([1, 2].map(() => outcome(sql`select pg_sleep(0.05)`)))
      expect(after.map((o) => o.result)).toEqual(['ok', 'ok'])
    } finally {
      relay.restore()
      await sql.end({ timeout: 1 })
      await sender.end({ timeout: 1 })
      relay.stop()
    }
  })
  test('a server that accepts and never answers: the query and all waiting behind it fail at the connect timeout, none later', async () => {
    // As a database host that went silent looks: the connection opens, the start-up is never answered.
    const silent = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
    const sql = openPostgres(`postgres://nobody@127.0.0.1:${silent.port}/none`, { max: 1 })
    try {
      const answers = await Promise.all(Array.from({ length: 5 }, () => outcome(sql`select 1`, 20_000)))
      expect(answers.map((answer) => answer.result)).toEqual(Array(5).fill('CONNECT_TIMEOUT'))
      // The connect timeout is 5 s (client.ts); the ones waiting used to wait for attempts of their own, 5 s each.
      expect(Math.max(...answers.map((answer) => answer.ms))).toBeLessThan(9_000)
    } finally {
      await sql.end({ timeout: 1 })
      silent.stop(true)
    }
  })
})
