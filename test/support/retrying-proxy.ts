/**
 * A small TCP proxy in front of several servers, as a load balancer in front of machines
 * (Fly's proxy does the same): each new connection goes to the next backend in turn, and a
 * backend that refuses the connection (stopped, restarting) is skipped for the next one.
 * Bytes are piped both ways unchanged, so it carries HTTP and SMTP alike. A connection
 * already open to a backend that then closes is closed on the client's side too, once what
 * the backend sent has been passed on: the client sees the close, as it would in production.
 */
import type { Socket, TCPSocketListener } from 'bun'

/** One direction of a link: bytes the socket has not taken yet, and whether to end it after them. */
interface Outbox {
  socket: Socket<Link> | null
  queue: Uint8Array[]
  ending: boolean
}

interface Link {
  toClient: Outbox
  toBackend: Outbox
  closed: boolean
}

function send(out: Outbox, chunk: Uint8Array): void {
  if (!out.socket || out.queue.length > 0) {
    out.queue.push(new Uint8Array(chunk)) // copied: the chunk's memory may be reused
    return
  }
  const written = out.socket.write(chunk)
  if (written < chunk.byteLength) out.queue.push(new Uint8Array(chunk.subarray(written)))
}

function flush(out: Outbox): void {
  if (!out.socket) return
  while (out.queue.length > 0) {
    const chunk = out.queue[0]!
    const written = out.socket.write(chunk)
    if (written < chunk.byteLength) {
      out.queue[0] = chunk.subarray(written)
      return
    }
    out.queue.shift()
  }
  if (out.ending) out.socket.end()
}

/** Ends the socket once its queue has gone out. */
function endAfterQueue(out: Outbox): void {
  out.ending = true
  if (out.queue.length === 0) out.socket?.end()
}

export interface RetryingProxy {
  port: number
  /** Connections sent to each backend so far, in the order of `backends()`. */
  readonly routed: number[]
  /** Connections refused by every backend. */
  readonly failed: number
  stop(): void
}

/** Listens on 127.0.0.1 on a free port; `backends()` is read per connection (ports may change). */
export function startRetryingProxy(backends: () => number[]): RetryingProxy {
  let next = 0
  let failed = 0
  const routed: number[] = []

  function close(link: Link): void {
    if (link.closed) return
    link.closed = true
    endAfterQueue(link.toClient)
    endAfterQueue(link.toBackend)
  }

  async function connectBackend(link: Link): Promise<void> {
    const ports = backends()
    for (let attempt = 0; attempt < ports.length; attempt++) {
      const index = next++ % ports.length
      try {
        const backend = await Bun.connect<Link>({
          hostname: '127.0.0.1',
          port: ports[index]!,
          data: link,
          socket: {
            data: (_socket, chunk) => send(link.toClient, chunk),
            drain: () => flush(link.toBackend),
            close: () => close(link),
            error: () => close(link),
          },
        })
        routed[index] = (routed[index] ?? 0) + 1
        link.toBackend.socket = backend
        flush(link.toBackend)
        return
      } catch {
        // Refused: this backend is not listening now; try the next one.
      }
    }
    failed++
    close(link)
  }

  const listener: TCPSocketListener<Link> = Bun.listen<Link>({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      open(client) {
        const link: Link = { toClient: { socket: client, queue: [], ending: false }, toBackend: { socket: null, queue: [], ending: false }, closed: false }
        client.data = link
        void connectBackend(link)
      },
      data: (client, chunk) => send(client.data.toBackend, chunk),
      drain: (client) => flush(client.data.toClient),
      close: (client) => close(client.data),
      error: (client) => close(client.data),
    },
  })

  return {
    port: listener.port,
    routed,
    get failed() {
      return failed
    },
    stop: () => listener.stop(true),
  }
}
