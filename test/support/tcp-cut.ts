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
  /** Bytes from the client before the upstream connection opened. */
  pending: Uint8Array[]
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
        const pair: Pair = { client, upstream: null, pending: [] }
        client.data = pair
        pairs.add(pair)
        Bun.connect<undefined>({
          hostname: targetHost,
          port: targetPort,
          socket: {
            open(upstream) {
              pair.upstream = upstream
              for (const chunk of pair.pending) upstream.write(chunk)
              pair.pending = []
            },
            data(_upstream, chunk) {
              client.write(chunk)
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
        if (pair.upstream) pair.upstream.write(chunk)
        else pair.pending.push(new Uint8Array(chunk))
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
