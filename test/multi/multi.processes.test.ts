/**
 * Two PostgreSQL-mode machines as real processes on one database, spoken to over real HTTP
 * and SMTP: mail into one wakes a wait on the other, and limits count across both.
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from 'bun:test'
import { longPollsWaiting, type MachineProcess, machineApi, pgMachine } from '../support/pg-processes.ts'
import { describeWithPostgres, migratedDatabase } from '../support/postgres.ts'
import { type RetryingProxy, startRetryingProxy } from '../support/retrying-proxy.ts'
import { sendRetrying } from '../support/retrying-sender.ts'
import { SmtpClient, SmtpConnectionClosedError, sendMail, simpleMessage } from '../support/smtp.ts'
import { until } from '../support/wait.ts'

setDefaultTimeout(60_000)

/** `work`, or a failure naming what it waited for once `ms` have passed. */
async function within<T>(work: Promise<T>, ms: number, what: () => string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`gave up after ${ms} ms waiting for ${what()}`)), ms)
  })
  try {
    return await Promise.race([work, expired])
  } finally {
    clearTimeout(timer)
  }
}

// /metrics tells how many long polls each machine holds, so a test knows when they are parked.
const METRICS_TOKEN = 'multi-processes-metrics-token'

const waitsHeld = (machine: MachineProcess) => longPollsWaiting(machine, METRICS_TOKEN)

describeWithPostgres('two server processes on one PostgreSQL database', () => {
  let a: MachineProcess
  let b: MachineProcess

  beforeAll(async () => {
    const url = await migratedDatabase()
    a = pgMachine('a', url, { METRICS_TOKEN })
    b = pgMachine('b', url, { METRICS_TOKEN })
    await Promise.all([a.start({ PG_MACHINE_TENANTS: 'local:1,hosted:1,hosted:4' }), b.start()])
  })
  afterAll(async () => {
    await Promise.all([a?.remove(), b?.remove()])
  })

  test('mail into machine A wakes a long poll waiting on machine B, with the message', async () => {
    const key = a.tenants[0]!.keys[0]!
    const inbox = await machineApi(a, 'POST', '/v1/inboxes', key)
    expect(inbox.status).toBe(201)
    const { id, address: email } = inbox.body.data
    const waiting = machineApi(b, 'GET', `/v1/inboxes/${id}/messages?wait_seconds=30&include=content&limit=1`, key)
    // The wait must be parked on B before the mail goes in, or a plain query would find it.
    await Bun.sleep(300)
    const sent = await sendMail(
      a.smtp,
      { to: [email] },
      simpleMessage({ to: email, subject: 'across machines', text: 'woken on B' }),
    )
    expect(sent.data?.code, `${JSON.stringify(sent)}\n${a.output()}`).toBe(250)
    const woken = await waiting
    expect(woken.status).toBe(200)
    expect(woken.body.data).toHaveLength(1)
    expect(woken.body.data[0].subject).toBe('across machines')
    expect(woken.body.data[0].text).toContain('woken on B')
  })

  test('the 31st concurrent wait of an organisation spread over A and B gets 429', async () => {
    const { keys } = a.tenants[2]! // a hosted organisation: 10 waits per key, 30 per organisation
    const inbox = await machineApi(a, 'POST', '/v1/inboxes', keys[0]!)
    expect(inbox.status).toBe(201)
    const path = `/v1/inboxes/${inbox.body.data.id}/messages?wait_seconds=60`
    // 30 waits over four keys (8, 8, 7, 7: under each key's 10), alternating machines.
    const settled: number[] = []
    const waits = Array.from({ length: 30 }, (_, i) =>
      machineApi(i % 2 === 0 ? a : b, 'GET', path, keys[i % 4]!).then((answer) => {
        settled.push(answer.status)
        return answer
      }),
    )
    // The 31st goes in only once all 30 hold their slot (15 on each machine). Sent earlier, it
    // races them: it is admitted and one of the 30 gets the 429 instead, which is still exact.
    await until(
      async () => (await waitsHeld(a)) === 15 && (await waitsHeld(b)) === 15,
      'the 30 waits to be parked, 15 on each machine',
      {
        timeoutMs: 30_000,
        intervalMs: 50,
      },
    )
    expect(settled).toEqual([])
    // Key 3 holds 7 of its 10: only the organisation's 30 refuses it, on either machine.
    for (const machine of [b, a]) {
      const extra = await machineApi(machine, 'GET', path.replace('wait_seconds=60', 'wait_seconds=1'), keys[3]!)
      expect(extra.status, `${machine.name}: ${extra.text}`).toBe(429)
      expect(extra.body.error.code).toBe('long_poll_limit_exceeded')
    }
    expect(settled).toEqual([])
    // Deleting the inbox ends the 30 waits on both machines, and frees their slots.
    expect((await machineApi(b, 'DELETE', `/v1/inboxes/${inbox.body.data.id}`, keys[0]!)).status).toBe(204)
    const ended = await Promise.all(waits)
    expect(ended.map((w) => w.body?.error?.code)).toEqual(Array(30).fill('inbox_not_found'))
    await until(async () => (await waitsHeld(a)) === 0 && (await waitsHeld(b)) === 0, 'every slot to be freed', {
      timeoutMs: 10_000,
      intervalMs: 50,
    })
  })

  test('kill -9 of machine A in the middle of ingest: every message that got 250 is readable through B, which served throughout', async () => {
    const key = a.tenants[0]!.keys[0]!
    const senders = 4
    const inboxes: { id: string; address: string }[] = []
    for (let i = 0; i < senders; i++) {
      const created = await machineApi(b, 'POST', '/v1/inboxes', key)
      expect(created.status).toBe(201)
      inboxes.push(created.body.data)
    }
    const acknowledged: string[][] = inboxes.map(() => [])
    let unanswered = 0
    let killed = false
    // Each sender keeps one connection to A and sends transaction after transaction until A dies.
    const sending = inboxes.map(async ({ address }, i) => {
      const client = await SmtpClient.connect(a.smtp)
      try {
        await client.command('EHLO sender.test')
        for (let n = 0; ; n++) {
          const subject = `kill-${i}-${n}`
          // A connection that dies with A fails the transaction's wait for its reply.
          const reply = await client
            .transaction({ to: [address] }, simpleMessage({ to: address, subject }))
            .catch((error: unknown) => {
              if (error instanceof SmtpConnectionClosedError) return null
              throw error
            })
          if (reply?.data?.code === 250) acknowledged[i]!.push(subject)
          else {
            // The connection died with A (a transaction cut short, never acknowledged).
            if (killed) unanswered++
            else throw new Error(`A refused ${subject} before the kill: ${JSON.stringify(reply)}`)
            return
          }
        }
      } finally {
        client.destroy()
      }
    })
    // B serves reads throughout: before, during and after A's death.
    const bStatuses: number[] = []
    let watching = true
    const watchB = (async () => {
      while (watching) {
        bStatuses.push((await machineApi(b, 'GET', '/v1/inboxes', key)).status)
        await Bun.sleep(50)
      }
    })()
    await until(
      () => acknowledged.every((list) => list.length >= 5),
      'every sender to have messages acknowledged by A',
      { timeoutMs: 30_000 },
    )
    killed = true
    await a.kill()
    await Promise.all(sending)
    // B also still takes mail after A's death.
    const afterwards = await sendMail(
      b.smtp,
      { to: [inboxes[0]!.address] },
      simpleMessage({ to: inboxes[0]!.address, subject: 'after-the-kill' }),
    )
    expect(afterwards.data?.code).toBe(250)
    watching = false
    await watchB
    expect(bStatuses.length).toBeGreaterThan(0)
    expect(bStatuses.filter((status) => status !== 200)).toEqual([])
    for (const [i, inbox] of inboxes.entries()) {
      const stored = new Set<string>()
      for (let cursor: string | null = null, first = true; first || cursor; first = false) {
        const listed = await machineApi(
          b,
          'GET',
          `/v1/inboxes/${inbox.id}/messages?limit=100${cursor ? `&cursor=${cursor}` : ''}`,
          key,
        )
        expect(listed.status).toBe(200)
        for (const message of listed.body.data) stored.add(message.subject)
        cursor = listed.body.next_cursor
      }
      expect(acknowledged[i]!.filter((subject) => !stored.has(subject))).toEqual([])
    }
    console.info(
      `kill -9 during ingest: ${acknowledged.flat().length} messages acknowledged by A, all readable on B; ${unanswered} transactions cut short`,
    )
    // A comes back on the same database for the tests after this one.
    await a.start()
  })

  // A deploy's rolling restart under test traffic: A, then B, gets SIGTERM (the patient drain)
  // and starts again, while four loops run create → wait → send → assert → delete through
  // retrying proxies (test/support/retrying-proxy.ts), as tests run through Fly's proxy.
  //
  // What a cycle may retry, and why (anything else fails the cycle):
  // - The send is never retried: a stopping machine serves a session it had accepted to its end
  //   (greeting, EHLO, the transaction), accepts and serves what waits in its listener's backlog
  //   before closing it, and refuses new connections at the socket (one that came as it stopped
  //   is refused at its SYN's retransmission, a second later), which the proxy moves to a
  //   machine listening then. A 421, a closed connection, any 4xx or 5xx or a step without an
  //   answer (10 s) fails the cycle.
  // - Nothing after the 250: the wait, parked before the send, must answer with that message.
  // - No HTTP request is retried here. The proxy retries a connection a machine refused and a
  //   request a stopping machine closed unread (on an idle keep-alive connection); an answer a
  //   stopping machine gives with `Connection: close` is a whole answer, read like any other
  //   (the next request opens a new connection, which the proxy gives to a listening machine).
  //   So a create, wait or delete with any other status than expected fails the cycle.
  //
  // Every wait is bounded and fails naming what it waited for: each HTTP request (the long poll
  // 20 s + 10 s, the others 10 s), each SMTP attempt (10 s), each stop (SIGTERM to exit) and
  // start, the cycles between restarts, and the loops' end. The test's own timeout is their sum.
  const WAIT_SECONDS = 20
  const STEP_MS = 10_000
  const MACHINE_MS = 30_000
  const LOOPS_END_MS = WAIT_SECONDS * 1000 + 3 * STEP_MS
  test(
    'a rolling restart behind retrying proxies fails no create → send → wait → assert → delete cycle',
    async () => {
      const key = a.tenants[0]!.keys[0]!
      const listening = (ports: number[]) => ports.filter((port) => port > 0)
      const http: RetryingProxy = startRetryingProxy(() => listening([a.http, b.http]), { http: true })
      const smtp: RetryingProxy = startRetryingProxy(() => listening([a.smtp, b.smtp]))
      const through = { httpUrl: `http://127.0.0.1:${http.port}` } as MachineProcess
      const restarts: { from: number; to: number }[] = []
      const cycles: { from: number; to: number }[] = []
      const failures: string[] = []
      let running = true
      let interrupted: unknown = null

      const stepped = <T>(name: string, work: Promise<T>) => {
        return work.catch((error) => {
          throw new Error(`${name}: ${error instanceof Error ? error.message : String(error)}`)
        })
      }
      async function cycle(loop: number, n: number): Promise<void> {
        const created = await stepped('create', machineApi(through, 'POST', '/v1/inboxes', key, undefined, STEP_MS))
        if (created.status !== 201) throw new Error(`create answered ${created.status} ${created.text}`)
        const { id, address } = created.body.data
        const subject = `rolling-${loop}-${n}`
        const waiting = stepped(
          'wait',
          machineApi(
            through,
            'GET',
            `/v1/inboxes/${id}/messages?wait_seconds=${WAIT_SECONDS}&include=content&limit=1`,
            key,
            undefined,
            WAIT_SECONDS * 1000 + STEP_MS,
          ),
        )
        waiting.catch(() => undefined) // read below; a send that fails first must not leave it unheard
        // Sent whether or not the wait is parked yet: a wait that starts late finds it stored.
        const sendStarted = performance.now()
        await stepped(
          'send',
          sendRetrying(smtp.port, { to: address }, simpleMessage({ to: address, subject, text: `cycle ${n}` }), {
            attemptTimeoutMs: STEP_MS,
            attempts: 1,
          }),
        )
        const sendTook = `the send took ${Math.round(performance.now() - sendStarted)} ms`
        // Acknowledged: from here on, nothing is retried.
        const woken = await waiting
        if (woken.status !== 200 || woken.body.data[0]?.subject !== subject)
          throw new Error(`wait answered ${woken.status} ${woken.text} (${sendTook})`)
        if (woken.body.data[0].text.trim() !== `cycle ${n}`)
          throw new Error(`wait answered the wrong content: ${woken.text}`)
        const deleted = await stepped(
          'delete',
          machineApi(through, 'DELETE', `/v1/inboxes/${id}`, key, undefined, STEP_MS),
        )
        if (deleted.status !== 204) throw new Error(`delete answered ${deleted.status} ${deleted.text}`)
      }

      const loops = Array.from({ length: 4 }, async (_, loop) => {
        for (let n = 0; running; n++) {
          const from = performance.now()
          try {
            await cycle(loop, n)
          } catch (error) {
            failures.push(`loop ${loop} cycle ${n}: ${error instanceof Error ? error.message : String(error)}`)
          }
          cycles.push({ from, to: performance.now() })
        }
      })
      try {
        await until(() => cycles.length >= 8, 'cycles to run through both machines before the restart', {
          timeoutMs: MACHINE_MS,
        })
        for (const machine of [a, b]) {
          const from = performance.now()
          const code = await within(
            machine.stop(),
            MACHINE_MS,
            () => `${machine.name} to exit after SIGTERM:\n${machine.output().slice(-4000)}`,
          )
          expect(code, machine.output().slice(-4000)).toBe(0)
          await within(
            machine.start(),
            MACHINE_MS,
            () => `${machine.name} to start again:\n${machine.output().slice(-4000)}`,
          )
          restarts.push({ from, to: performance.now() })
          const done = cycles.length
          // The restarted machine takes its share again before the next one stops.
          await until(() => cycles.length >= done + 8, `cycles to run after ${machine.name} restarted`, {
            timeoutMs: MACHINE_MS,
          })
        }
      } catch (error) {
        interrupted = error
      }
      running = false
      try {
        // A failure of the restart itself (above) is named here too, or this wait's would hide it.
        const why = interrupted
          ? `, after ${interrupted instanceof Error ? interrupted.message : String(interrupted)}`
          : ''
        await within(
          Promise.all(loops),
          LOOPS_END_MS,
          () => `the loops to end their last cycles${why}; failures so far: ${JSON.stringify(failures)}`,
        )
      } finally {
        http.stop()
        smtp.stop()
      }
      const overlapped = cycles.filter((c) => restarts.some((r) => c.from < r.to && c.to > r.from)).length
      console.info(
        `rolling restart: ${cycles.length} cycles, ${overlapped} overlapped a restart, ${failures.length} failed; proxies routed http ${http.routed} smtp ${smtp.routed}`,
      )
      if (failures.length > 0) console.info(`failed cycles: ${failures.join('\n')}`)
      if (interrupted) throw interrupted
      expect(failures).toEqual([])
      expect(overlapped).toBeGreaterThan(0)
      expect(http.failed + smtp.failed).toBe(0)
    },
    MACHINE_MS * (1 + 3 * 2) + LOOPS_END_MS + 10_000,
  )
})
