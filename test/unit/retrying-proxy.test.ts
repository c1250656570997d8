/** The test proxy the rolling-restart suite sends its traffic through: turns, retries, whole bytes. */
import { afterEach, expect, setDefaultTimeout, test } from 'bun:test'
import { startRetryingProxy, type RetryingProxy } from '../support/retrying-proxy.ts'

// Megabytes through three sockets on a machine other work keeps busy: a deadline, not a speed.
setDefaultTimeout(30_000)

const stops: Array<() => void> = []
afterEach(() => {
  while (stops.length > 0) stops.pop()!()
})

/** A server that answers every byte it gets with the same byte, tagged on connect with its name. */
function echoServer(name: string) {
  const listener = Bun.listen({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      open: (socket) => void socket.write(`${name}:`),
      data: (socket, chunk) => void socket.write(chunk),
    },
  })
  stops.push(() => listener.stop(true))
  return listener
}

/** A port that refuses connections: one that was listening a moment ago. */
function closedPort(): number {
  const listener = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = listener.port
  listener.stop(true)
  return port
}

async function exchange(proxy: RetryingProxy, payload: Uint8Array): Promise<Uint8Array> {
  const received: Uint8Array[] = []
  let total = 0
  const { promise, resolve } = Promise.withResolvers<void>()
  const expected = payload.byteLength + 2 // "a:" or "b:"
  const pending = [payload]
  const socket = await Bun.connect({
    hostname: '127.0.0.1',
    port: proxy.port,
    socket: {
      data: (_s, chunk) => {
        received.push(new Uint8Array(chunk))
        total += chunk.byteLength
        if (total >= expected) resolve()
      },
      drain: (s) => {
        while (pending.length > 0) {
          const chunk = pending[0]!
          const written = s.write(chunk)
          if (written < chunk.byteLength) {
            pending[0] = chunk.subarray(written)
            return
          }
          pending.shift()
        }
      },
      close: () => resolve(),
    },
  })
  const first = pending[0]!
  const written = socket.write(first)
  if (written < first.byteLength) pending[0] = first.subarray(written)
  else pending.shift()
  await promise
  socket.end()
  return Buffer.concat(received)
}

test('connections take turns between the backends; a refusing backend is skipped', async () => {
  const a = echoServer('a')
  const down = closedPort()
  const proxy = startRetryingProxy(() => [a.port, down])
  stops.push(() => proxy.stop())
  const answers = []
  for (let i = 0; i < 4; i++)
    answers.push(Buffer.from(await exchange(proxy, new TextEncoder().encode(`hello ${i}`))).toString())
  expect(answers).toEqual(['a:hello 0', 'a:hello 1', 'a:hello 2', 'a:hello 3'])
  expect(proxy.routed[0]).toBe(4)
  expect(proxy.routed[1]).toBeUndefined()
  expect(proxy.failed).toBe(0)
})

test('turns alternate while both listen', async () => {
  const a = echoServer('a')
  const b = echoServer('b')
  const proxy = startRetryingProxy(() => [a.port, b.port])
  stops.push(() => proxy.stop())
  const tags = []
  for (let i = 0; i < 4; i++)
    tags.push(
      Buffer.from(await exchange(proxy, new TextEncoder().encode('x')))
        .toString()
        .slice(0, 2),
    )
  expect(tags).toEqual(['a:', 'b:', 'a:', 'b:'])
})

test('4 MiB go through and come back byte for byte (the proxy waits for slow sockets)', async () => {
  const a = echoServer('a')
  const proxy = startRetryingProxy(() => [a.port])
  stops.push(() => proxy.stop())
  const payload = new Uint8Array(4 * 1024 * 1024)
  for (let i = 0; i < payload.length; i++) payload[i] = (i * 31) & 0xff
  const echoed = await exchange(proxy, payload)
  expect(echoed.byteLength).toBe(payload.byteLength + 2)
  expect(Buffer.from(echoed.subarray(2)).equals(Buffer.from(payload))).toBe(true)
})

test('with every backend refusing, the client is closed and the failure counted', async () => {
  const proxy = startRetryingProxy(() => [closedPort(), closedPort()])
  stops.push(() => proxy.stop())
  const answer = await exchange(proxy, new TextEncoder().encode('anyone?'))
  expect(answer.byteLength).toBe(0)
  expect(proxy.failed).toBe(1)
})

/** An HTTP backend that counts the requests it took and names itself in every answer. */
function httpServer(name: string, headers: Record<string, string> = {}) {
  const taken: string[] = []
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: async (request) => {
      taken.push(`${request.method} ${new URL(request.url).pathname}`)
      return new Response(`${name} took ${request.method}`, { headers })
    },
  })
  stops.push(() => server.stop(true))
  return { port: server.port!, taken }
}

test('HTTP mode: an answer with Connection: close is whole and final; the request is never sent again', async () => {
  // A stopping machine answers so; the next request must go to a machine that listens.
  const stopping = httpServer('a', { connection: 'close' })
  const other = httpServer('b')
  const proxy = startRetryingProxy(() => [stopping.port, other.port], { http: true })
  stops.push(() => proxy.stop())
  const first = await fetch(`http://127.0.0.1:${proxy.port}/v1/inboxes`, { method: 'POST' })
  expect(first.headers.get('connection')).toBe('close')
  expect(await first.text()).toBe('a took POST')
  const second = await fetch(`http://127.0.0.1:${proxy.port}/v1/inboxes/x`, { method: 'DELETE' })
  expect(await second.text()).toBe('b took DELETE')
  // Each request taken exactly once: the closed connection after an answer resends nothing.
  await Bun.sleep(100) // the window in which a wrongly resent request would arrive
  expect(stopping.taken).toEqual(['POST /v1/inboxes'])
  expect(other.taken).toEqual(['DELETE /v1/inboxes/x'])
})

test('HTTP mode: a request a backend closed unanswered goes to the next backend, once', async () => {
  // A stopping machine closing an idle keep-alive connection just as a request arrives on it.
  let unread = 0
  const closing = Bun.listen({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      data: (socket) => {
        unread++
        socket.end()
      },
    },
  })
  stops.push(() => closing.stop(true))
  const other = httpServer('b')
  const proxy = startRetryingProxy(() => [closing.port, other.port], { http: true })
  stops.push(() => proxy.stop())
  const answer = await fetch(`http://127.0.0.1:${proxy.port}/v1/inboxes`, { method: 'POST' })
  expect(answer.status).toBe(200)
  expect(await answer.text()).toBe('b took POST')
  expect(unread).toBe(1)
  expect(other.taken).toEqual(['POST /v1/inboxes'])
  expect(proxy.failed).toBe(0)
})
