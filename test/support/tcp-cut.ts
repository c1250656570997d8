/**
 * A TCP relay on loopback (port 0) in front of a server, whose link can be cut and restored:
 * cutting closes every relayed connection and refuses new ones (accepted, then closed at
 * once), as a database that went away or is restarting looks to its clients; restoring
 * relays again. The listener itself stays, so its port never changes.
 */
import type { Socket, TCPSocketListener } from 'bun'

interface Pair {
  client: Socket<Pair>
  upstream: Socket<undefined> | null
  /** Bytes not yet taken by the upstream socket (before it opened, or under backpressure). */
  pending: Uint8Array[]
  /** Bytes not yet taken by the client socket (under backpressure). */
  back: Uint8Array[]
}

/** Writes what the socket takes and keeps the rest, in order, for its drain. */
function write(socket: Socket<any>, queue: Uint8Array[], chunk?: Uint8Array): void {
  if (chunk) queue.push(new Uint8Array(chunk)) // copied: the chunk's memory may be reused
  while (queue.length > 0) {
    const head = queue[0]!
    const written = socket.write(head)
    if (written < head.byteLength) {
      queue[0] = head.subarray(Math.max(0, written))
      return
    }
    queue.shift()
  }
}

export interface TcpCut {
  port: number
  /** Closes every relayed connection and refuses new ones. */
  cut(): void
  restore(): void
  stop(): void
}

export function tcpCut(targetHost: string, targetPort: number): TcpCut {
  const pairs = new Set<Pair>()
  let open = true
  const listener: TCPSocketListener<Pair> = Bun.listen<Pair>({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      open(client) {
        if (!open) {
          client.end()
          return
        }
        const pair: Pair = { client, upstream: null, pending: [], back: [] }
        client.data = pair
        pairs.add(pair)
        Bun.connect<undefined>({
          hostname: targetHost,
          port: targetPort,
          socket: {
            open(upstream) {
              pair.upstream = upstream
              write(upstream, pair.pending)
            },
            data(_upstream, chunk) {
              write(client, pair.back, chunk)
            },
            drain(upstream) {
              write(upstream, pair.pending)
            },
            close() {
              pairs.delete(pair)
              client.end()
            },
            error() {
              client.end()
            },
          },
        }).catch(() => client.end())
      },
      data(client, chunk) {
        const pair = client.data
        if (!pair) return // refused while cut: what it sends before it sees the close goes nowhere
        if (pair.upstream) write(pair.upstream, pair.pending, chunk)
        else pair.pending.push(new Uint8Array(chunk))
      },
      drain(client) {
        if (client.data) write(client, client.data.back)
      },
      close(client) {
        const pair = client.data
        if (!pair) return
        pairs.delete(pair)
        pair.upstream?.end()
      },
    },
  })
  return {
    port: listener.port,
    cut() {
      open = false
      for (const pair of pairs) {
        pair.client.terminate()
        pair.upstream?.terminate()
      }
      pairs.clear()
    },
    restore() {
      open = true
    },
    stop() {
      this.cut()
      listener.stop(true)
    },
  }
}
