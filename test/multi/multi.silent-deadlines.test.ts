/**
 * A long poll answers at its deadline, within a second, whatever the database does: here it
 * goes silent (test/support/tcp-cut.ts: every socket open, nothing passes) while polls wait.
 * The statement sent at a poll's deadline gets no answer until the connection is given up
 * (the statement timeout plus 2 s: 12 s by default), which used to make every poll whose
 * deadline fell in the silence answer about 5 s late, and once not at all. Each answers now
 * within a second of its deadline, with the 500 and Retry-After every operation may answer
 * (it cannot read the inbox, so it cannot say nothing arrived), and the request log records
 * that answer.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { expectDocumentedEvents } from '../support/log-events.ts'
import { longPollsWaiting, type MachineProcess, machineApi, pgMachine } from '../support/pg-processes.ts'
import { describeWithPostgres, migratedDatabase } from '../support/postgres.ts'
import { expectError } from '../support/shapes.ts'
import { type TcpCut, tcpCut } from '../support/tcp-cut.ts'
import { timed, until } from '../support/wait.ts'

setDefaultTimeout(60_000)

const METRICS_TOKEN = 'multi-silent-deadlines-metrics-token'
const WAITS = [4, 6, 8]
/** The promise: an answer at the deadline ±1 s. */
const LATE_MS = 1_000

describeWithPostgres('long polls whose deadline falls in a silence of the database', () => {
  let relay: TcpCut
  let a: MachineProcess

  beforeAll(async () => {
    const direct = new URL(await migratedDatabase())
    relay = tcpCut(direct.hostname, Number(direct.port))
    const relayed = new URL(direct)
    relayed.port = String(relay.port)
    // The default statement timeout (10 s): the silence deadline (12 s) outlasts every wait.
    a = pgMachine('a', relayed.href, { METRICS_TOKEN, LOG_LEVEL: 'info' })
    await a.start({ PG_MACHINE_TENANTS: 'local:1' })
  })
  afterAll(async () => {
    relay?.restore()
    await a?.remove()
    relay?.stop()
  })

  test(`waits of ${WAITS.join(', ')} s each answer within ${LATE_MS} ms of their deadline, and the log says what was sent`, async () => {
    const key = a.tenants[0]!.keys[0]!
    const created = await machineApi(a, 'POST', '/v1/inboxes', key)
    expect(created.status).toBe(201)
    const polls = WAITS.map((seconds) =>
      timed(() => machineApi(a, 'GET', `/v1/inboxes/${created.body.data.id}/messages?wait_seconds=${seconds}`, key)),
    )
    await until(async () => (await longPollsWaiting(a, METRICS_TOKEN)) === WAITS.length, 'the polls to be parked', {
      timeoutMs: 10_000,
      intervalMs: 20,
    })
    relay.silence()
    const answered = await Promise.all(polls)
    relay.restore()
    for (const [i, { value, ms }] of answered.entries()) {
      expectError(value, 500, 'internal_error')
      expect(value.headers.get('retry-after')).toBe('5')
      expect(ms).toBeGreaterThanOrEqual(WAITS[i]! * 1000 - 50)
      expect(ms, `wait_seconds=${WAITS[i]}`).toBeLessThan(WAITS[i]! * 1000 + LATE_MS)
    }
    // The request log holds the 500 each poll was answered with. The line is written after the
    // answer, and reaches this process through the child's pipe: wait for the lines, not a time.
    const requestLines = () =>
      a
        .output()
        .split('\n')
        .filter(
          (line) => line.startsWith('{"time"') && line.includes('"event":"http_request"') && line.includes('/messages'),
        )
    await until(() => requestLines().length >= WAITS.length, "every poll's request line", {
      timeoutMs: 10_000,
      intervalMs: 20,
    })
    const pollLines = requestLines().map((line) => JSON.parse(line) as { status: number; connection_closed?: boolean })
    expect(pollLines.map((line) => [line.status, line.connection_closed ?? false])).toEqual(
      WAITS.map(() => [500, false]),
    )
    expectDocumentedEvents(a.output(), 'a')
    console.info(`answered after ${answered.map(({ ms }) => Math.round(ms)).join(', ')} ms`)
  })
})
