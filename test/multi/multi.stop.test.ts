/**
 * Stopping one of several machines (PostgreSQL mode's drain): it stops accepting at once,
 * since another machine takes new connections, but lets a waiting long poll run to its own
 * answer, and only then ends the console's live views (which have no answer of their own)
 * and returns. A long poll is a request here that answers after a while and is counted while
 * it waits, as the real one is; the listeners are real.
 */
import { afterEach, expect, setDefaultTimeout, test } from 'bun:test'
import type { AddressInfo } from 'node:net'
import { SMTPServer } from 'smtp-server'
import { drainPatiently, type HttpServer } from '../../src/app/listeners.ts'

setDefaultTimeout(30_000)

let http: HttpServer | undefined
let smtp: SMTPServer | undefined
afterEach(() => {
  http?.stop(true)
  smtp?.close()
})

async function listeners(waitMs: number, onAnswer: () => void = () => {}) {
  let waiting = 0
  http = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: async () => {
      waiting++
      await Bun.sleep(waitMs)
      waiting--
      onAnswer()
      return new Response('a page of messages')
    },
  })
  smtp = new SMTPServer({ authOptional: true, logger: false })
  const smtpPort = await new Promise<number>((resolve) =>
    smtp!.listen(0, '127.0.0.1', () => resolve((smtp!.server.address() as AddressInfo).port)),
  )
  return { waiting: () => waiting, httpPort: http.port!, smtpPort }
}

const connects = (port: number) =>
  Bun.connect({ hostname: '127.0.0.1', port, socket: { data() {} } }).then(
    (socket) => {
      socket.end()
      return true
    },
    () => false,
  )

test('a waiting long poll gets its own answer; new connections are refused meanwhile; live views end after it', async () => {
  // The order as the server sees it: the poll's answer is given when its handler returns
  // (the client may read it later, on a busy machine after the drain went on).
  const order: string[] = []
  // The poll is answered after 3 s: a connection tried while the stop still accepts its backlog
  // has its SYN dropped (src/app/handshake-filter.ts) and is refused at the client's
  // retransmission, a second later; both are tried at once and must be refused before then.
  const { waiting, httpPort, smtpPort } = await listeners(3_000, () => order.push('poll answered'))
  const poll = fetch(`http://127.0.0.1:${httpPort}/v1/inboxes/x/messages?wait_seconds=180`)
  while (waiting() === 0) await Bun.sleep(10)
  const drained = drainPatiently(http!, smtp!, waiting, () => order.push('live views ended')).then(() =>
    order.push('drained'),
  )
  await Bun.sleep(100)
  expect(await Promise.all([connects(httpPort), connects(smtpPort)])).toEqual([false, false])
  expect(order).toEqual([])
  const response = await poll
  expect(response.status).toBe(200)
  expect(await response.text()).toBe('a page of messages')
  await drained
  expect(order).toEqual(['poll answered', 'live views ended', 'drained'])
})

test('a long poll still waiting when the drain gives up is left to the cut that follows', async () => {
  const { waiting, httpPort } = await listeners(5_000)
  const poll = fetch(`http://127.0.0.1:${httpPort}/wait`).catch(() => null)
  while (waiting() === 0) await Bun.sleep(10)
  let ended = false
  await drainPatiently(http!, smtp!, waiting, () => (ended = true), 300)
  expect(ended).toBe(true)
  // Returned after its 300 ms for the polls, with the poll still waiting: the HTTP stop cuts it.
  expect(waiting()).toBe(1)
  http!.stop(true)
  await poll
})
