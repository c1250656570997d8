/**
 * PostgreSQL restarted or killed under load (stopped at once, or its postmaster alone killed -9),
 * on two real server processes: one directly on the
 * database, one behind a relay (test/support/tcp-cut.ts). No process logs an uncaught exception
 * (the patched postgres.js once wrote to a socket already dropped: `TypeError: null is not an
 * object (evaluating 'socket.write')`), and once /ready answers 200 again no request stalls:
 * every request begun after that answers promptly, none waits out a connect timeout.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { expectDocumentedEvents } from '../support/log-events.ts'
import { type MachineProcess, machineApi, pgMachine } from '../support/pg-processes.ts'
import { describeWithPostgres, migratedDatabase, ownCluster, type TestCluster } from '../support/postgres.ts'
import { sendMail, simpleMessage } from '../support/smtp.ts'
import { type TcpCut, tcpCut } from '../support/tcp-cut.ts'
import { timed, until } from '../support/wait.ts'

setDefaultTimeout(120_000)

/** After /ready is back, an answer takes at most this (a connect timeout is 5 s). */
const PROMPT_AFTER_READY_MS = 2_000

describeWithPostgres('PostgreSQL restarted and killed under load', () => {
  let cluster: TestCluster
  let relay: TcpCut
  let a: MachineProcess
  let b: MachineProcess
  let key: string
  let address: string

  beforeAll(async () => {
    cluster = ownCluster()
    const url = new URL(await migratedDatabase(cluster))
    relay = tcpCut(url.hostname, Number(url.port))
    const relayed = new URL(url)
    relayed.port = String(relay.port)
    a = pgMachine('direct', url.href)
    b = pgMachine('relayed', relayed.href)
    await a.start({ PG_MACHINE_TENANTS: 'local:1' })
    await b.start()
    key = a.tenants[0]!.keys[0]!
    const created = await machineApi(a, 'POST', '/v1/inboxes', key)
    expect(created.status).toBe(201)
    address = created.body.data.address
  })
  afterAll(async () => {
    // The machines go first: a cluster that fails to start again must not leave them running.
    await Promise.all([a?.remove(), b?.remove()])
    relay?.stop()
    // Started if a test left it stopped, so that its stop (pg_ctl) succeeds.
    cluster?.start()
    cluster?.stop()
  })

  interface Answered {
    machine: string
    began: number
    ended: number
    ok: boolean
  }

  /** Requests and mail on both machines, until `stop` is set; failures are expected during the fault. */
  function load(stop: { done: boolean }, answered: Answered[]) {
    const loop = async (machine: MachineProcess) => {
      let i = 0
      while (!stop.done) {
        const began = performance.now()
        const note = (ok: boolean) => answered.push({ machine: machine.name, began, ended: performance.now(), ok })
        await Promise.allSettled([
          machineApi(machine, 'GET', '/v1/inboxes', key, undefined, 20_000).then(
            (answer) => note(answer.status === 200),
            () => note(false),
          ),
          sendMail(
            machine.smtp,
            { to: [address] },
            simpleMessage({ to: address, subject: `load ${machine.name} ${i++}` }),
          ).then(
            (sent) => note(sent.data?.code === 250),
            () => note(false),
          ),
        ])
      }
    }
    return Promise.all([loop(a), loop(b)])
  }

  const bothReady = () =>
    until(
      async () => (await Promise.all([a, b].map((m) => machineApi(m, 'GET', '/ready')))).every((r) => r.status === 200),
      'both machines to be ready',
      {
        timeoutMs: 40_000,
        intervalMs: 100,
      },
    )

  /** Once ready: every request answers promptly on both machines. */
  async function promptOnceReady(label: string) {
    const slowest: number[] = []
    for (let round = 0; round < 5; round++) {
      for (const machine of [a, b]) {
        const answers = await Promise.all(
          Array.from({ length: 6 }, () =>
            timed(() => machineApi(machine, 'GET', '/v1/inboxes', key, undefined, 20_000)),
          ),
        )
        for (const answer of answers)
          expect(answer.value.status, `${label} ${machine.name}: ${answer.value.text}`).toBe(200)
        slowest.push(Math.max(...answers.map((answer) => answer.ms)))
      }
    }
    expect(Math.max(...slowest), label).toBeLessThan(PROMPT_AFTER_READY_MS)
    return Math.round(Math.max(...slowest))
  }

  for (const [label, fault] of [
    ['a fast restart', (c: TestCluster) => c.restart()],
    ['the server killed and started again', (c: TestCluster) => c.stop()],
    // kill -9 of the postmaster alone: its backends end their connections one by one as each
    // notices, rather than all at once at a shutdown's signal.
    ['the postmaster alone killed -9 and started again', (c: TestCluster) => c.killPostmaster()],
  ] as const) {
    test(`${label}: no uncaught exception, and no stall once /ready is back`, async () => {
      const stop = { done: false }
      const answered: Answered[] = []
      const running = load(stop, answered)
      await Bun.sleep(1_000)
      fault(cluster)
      await Bun.sleep(1_500)
      cluster.start()
      await bothReady()
      const readyAt = performance.now()
      const slowest = await promptOnceReady(label)
      stop.done = true
      await running
      // Work begun during the fault was answered by the time both were ready again (a refusal
      // is fine): none hung on and failed later, after /ready had said 200.
      const lateFailures = answered.filter((work) => !work.ok && work.ended > readyAt + 500)
      expect(lateFailures, JSON.stringify(lateFailures.slice(0, 3))).toEqual([])
      for (const machine of [a, b]) {
        const uncaught = machine
          .output()
          .split('\n')
          .filter(
            (line) => line.includes('"event":"uncaught_exception"') || line.includes('"event":"unhandled_rejection"'),
          )
        expect(uncaught, machine.name).toEqual([])
        expectDocumentedEvents(machine.output(), machine.name)
      }
      console.info(`${label}: slowest answer once ready ${slowest} ms`)
    })
  }
})
