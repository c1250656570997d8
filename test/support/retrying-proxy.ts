/**
 * A small TCP proxy in front of several servers, as a load balancer in front of machines
 * (Fly's proxy does the same): each new connection goes to the next backend in turn, and a
 * backend that refuses the connection (stopped, restarting) is skipped for the next one.
 * Bytes are piped both ways unchanged, so it carries HTTP and SMTP alike. A connection
 * already open to a backend that then closes is closed on the client's side too, once what
 * the backend sent has been passed on: the client sees the close, as it would in production.
 *
 * With `{ http: true }` it keeps HTTP clients' connections as Fly's HTTP proxy does: a client's
 * keep-alive connection is to the proxy, not to a machine. A backend that closes a connection
 * (a stopping server closing its idle keep-alive connections) leaves the client's open, and
 * the client's next request goes to a backend that listens. Request bytes that a backend
 * closed on without answering a byte (sent as it was closing) are sent again to the next
 * backend, as Fly's proxy retries a request a machine did not take: a stopping server closes
 * only connections with no request in progress, so nothing is done twice. Not for SMTP,
 * whose session cannot move to another server mid-way.
 */
import type { Socket, TCPSocketListener } from 'bun'
import { WriteQueue } from './write-queue.ts'

interface Link {
  toClient: WriteQueue
  toBackend: WriteQueue
  /** The backend connection the link uses now (null while none is open). */
  backend: Socket<Link> | null
  closed: boolean
  /** HTTP mode: client bytes the current backend has not answered yet (sent again if it closes). */
  unanswered: Uint8Array[]
  /** HTTP mode: a backend connection is being opened. */
  connecting: boolean
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
export function startRetryingProxy(backends: () => number[], options: { http?: boolean } = {}): RetryingProxy {
  let next = 0
  let failed = 0
  const routed: number[] = []

  function close(link: Link): void {
    if (link.closed) return
    link.closed = true
    link.toClient.end()
    link.toBackend.end()
  }

  /** HTTP mode: the backend went away; the client's connection stays, unanswered bytes go again. */
  function detach(link: Link, backend: Socket<Link>): void {
    if (backend !== link.backend) return // an earlier backend's late close
    if (!options.http || link.closed) {
      close(link)
      return
    }
    link.backend = null
    link.toBackend = new WriteQueue()
    for (const chunk of link.unanswered) link.toBackend.write(chunk)
    if (link.unanswered.length > 0) void connectBackend(link)
  }

  async function connectBackend(link: Link): Promise<void> {
    link.connecting = true
    // This connection's own walk through the backends from its turn: with a counter shared by
    // connections opened at the same moment, two attempts of one could land on the same
    // refusing backend and never try the one that listens.
    const first = next++
    const tried = new Set<number>()
    for (let attempt = 0; ; attempt++) {
      // The backends as they are now, at each attempt: an attempt can take a second (a stopping
      // server drops a new connection's SYN, refused at its retransmission), in which a backend
      // may have stopped and another started on a new port, which a proxy then tries too.
      const ports = backends()
      const untried = ports.filter((port) => !tried.has(port))
      if (untried.length === 0) break
      const port = untried[(first + attempt) % untried.length]!
      tried.add(port)
      const index = ports.indexOf(port)
      try {
        const backend = await Bun.connect<Link>({
          hostname: '127.0.0.1',
          port,
          data: link,
          socket: {
            data: (_socket, chunk) => {
              link.unanswered = []
              link.toClient.write(chunk)
            },
            drain: (socket) => {
              if (socket === link.backend) link.toBackend.flush()
            },
            close: (socket) => detach(link, socket),
            error: (socket) => detach(link, socket),
          },
        })
        routed[index] = (routed[index] ?? 0) + 1
        link.backend = backend
        link.connecting = false
        if (link.closed) backend.end()
        else link.toBackend.attach(backend)
        return
      } catch {
        // Refused: this backend is not listening now; try the next one.
      }
    }
    failed++
    link.connecting = false
    close(link)
  }

  function fromClient(link: Link, chunk: Uint8Array): void {
    if (options.http) {
      link.unanswered.push(new Uint8Array(chunk))
      if (!link.backend && !link.connecting) void connectBackend(link)
    }
    link.toBackend.write(chunk)
  }

  const listener: TCPSocketListener<Link> = Bun.listen<Link>({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      open(client) {
        const link: Link = {
          toClient: new WriteQueue(),
          toBackend: new WriteQueue(),
          backend: null,
          closed: false,
          unanswered: [],
          connecting: false,
        }
        link.toClient.attach(client)
        client.data = link
        void connectBackend(link)
      },
      data: (client, chunk) => fromClient(client.data, chunk),
      drain: (client) => client.data.toClient.flush(),
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
