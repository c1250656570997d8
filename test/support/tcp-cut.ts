/**
 * A TCP relay on loopback (port 0) in front of a server, whose link can be cut and restored:
 * cutting closes every relayed connection and refuses new ones (accepted, then closed at
 * once), as a database that went away or is restarting looks to its clients; restoring
 * relays again. The listener itself stays, so its port never changes.
 *
 * It also counts round trips: a client's turn to speak after the server has answered it (or
 * its first bytes on a connection) is one. Statements a client pipelines go out in one turn,
 * however many TCP segments carry them; a statement awaited before the next is sent costs one.
 */
import type { Socket, TCPSocketListener } from 'bun'
import { WriteQueue } from './write-queue.ts'

interface Pair {
  client: Socket<Pair>
  upstream: Socket<undefined> | null
  /** Bytes for the upstream socket (before it opened, or under backpressure). */
  pending: WriteQueue
  /** Bytes for the client socket (under backpressure). */
  back: WriteQueue
  /** The server has sent something since the client last did: the client's next bytes start a turn. */
  answered: boolean
}

export interface TcpCut {
  port: number
  /** Closes every relayed connection and refuses new ones. */
  cut(): void
  restore(): void
  stop(): void
  /** Round trips begun by clients over every relayed connection so far. */
  turns(): number
}

export function tcpCut(targetHost: string, targetPort: number): TcpCut {
  const pairs = new Set<Pair>()
  let open = true
  let turns = 0
  const listener: TCPSocketListener<Pair> = Bun.listen<Pair>({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      open(client) {
        if (!open) {
          client.end()
          return
        }
        const pair: Pair = { client, upstream: null, pending: new WriteQueue(), back: new WriteQueue(), answered: true }
        pair.back.attach(client)
        client.data = pair
        pairs.add(pair)
        Bun.connect<undefined>({
          hostname: targetHost,
          port: targetPort,
          socket: {
            open(upstream) {
              pair.upstream = upstream
              pair.pending.attach(upstream)
            },
            data(_upstream, chunk) {
              pair.answered = true
              pair.back.write(chunk)
            },
            drain() {
              pair.pending.flush()
            },
            close() {
              pairs.delete(pair)
              pair.back.end() // what the upstream sent before closing still reaches the client
            },
            error() {
              client.end()
            },
          },
        }).catch(() => client.end())
      },
      data(client, chunk) {
        // Refused while cut (no pair): what it sends before it sees the close goes nowhere.
        const pair = client.data
        if (!pair) return
        if (pair.answered) turns++
        pair.answered = false
        pair.pending.write(chunk)
      },
      drain(client) {
        client.data?.back.flush()
      },
      close(client) {
        const pair = client.data
        if (!pair) return
        pairs.delete(pair)
        pair.pending.end() // also an upstream still connecting, once it opens
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
    turns: () => turns,
  }
}
