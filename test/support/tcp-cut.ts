/**
 * A TCP relay on loopback (port 0) in front of a server, whose link can be cut and restored:
 * cutting closes every relayed connection and refuses new ones (accepted, then closed at
 * once), as a database that went away or is restarting looks to its clients; restoring
 * relays again. The listener itself stays, so its port never changes.
 *
 * It can also go silent, as a network path that drops every packet or a frozen server looks:
 * every socket stays open, new connections are accepted (the relay is local) and nothing
 * passes either way; the bytes are held, not dropped, as TCP retransmits them until the path
 * is back. A connection one end closes meanwhile reaches the other end closed only once the
 * path is back; what a client sent before it gave its connection up is dropped (an abortive
 * close: the server never runs a statement its client no longer waits for). Restoring
 * delivers what was held, in order, then the closes, and connects the connections accepted
 * meanwhile.
 *
 * It can also refuse new connections only (`refuseNew`): each is accepted and closed a while
 * later without reaching the server, while the connections already relayed go on, as an
 * attempt begun while a database was restarting looks when its refusal arrives after the
 * database came back. Or it can answer the next few new connections itself (`replyNew`): the
 * given bytes in reply to the client's first, then a close, as a server process that is going
 * away answers a start-up.
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
  /** While silent: the client's bytes and the server's, held for the restore. */
  heldUp: Uint8Array[]
  heldBack: Uint8Array[]
}

export interface TcpCut {
  port: number
  /** Closes every relayed connection and refuses new ones. */
  cut(): void
  /** Keeps every connection open and accepts new ones, but nothing passes either way until restore. */
  silence(): void
  /** New connections are accepted and closed after `afterMs`, unrelayed; the open ones go on. */
  refuseNew(afterMs: number): void
  /** The next `count` new connections get `reply` to their first bytes, then a close; unrelayed. */
  replyNew(reply: Uint8Array, count: number): void
  /** Relays again: after a cut, new connections; after silence, the held bytes first. */
  restore(): void
  stop(): void
  /** Round trips begun by clients over every relayed connection so far. */
  turns(): number
}

export function tcpCut(targetHost: string, targetPort: number): TcpCut {
  const pairs = new Set<Pair>()
  let open = true
  let turns = 0
  let silent = false
  /** Set while new connections are refused (refuseNew): how long each is held before its close. */
  let refusingAfterMs: number | null = null
  /** Set by replyNew: what the next new connections are answered, and how many are left. */
  let replying: { reply: Uint8Array; left: number } | null = null
  /** Connections replyNew took: answered on their first bytes, never relayed. */
  const answering = new Map<Socket<Pair>, Uint8Array>()
  /** Accepted while silent: their upstream is connected on restore. */
  let unconnected: Pair[] = []
  /** Closes that happened while silent, passed on at restore. */
  let closes: (() => void)[] = []
  const whenHeard = (close: () => void) => (silent ? closes.push(close) : close())
  /** What was held for `pair`, passed on: the client's bytes upstream, the server's back. */
  const flushHeld = (pair: Pair) => {
    for (const chunk of pair.heldUp.splice(0)) {
      if (pair.answered) turns++
      pair.answered = false
      pair.pending.write(chunk)
    }
    for (const chunk of pair.heldBack.splice(0)) {
      pair.answered = true
      pair.back.write(chunk)
    }
  }
  const connectUpstream = (pair: Pair) => {
    Bun.connect<undefined>({
      hostname: targetHost,
      port: targetPort,
      socket: {
        open(upstream) {
          pair.upstream = upstream
          pair.pending.attach(upstream)
        },
        data(_upstream, chunk) {
          if (silent) {
            pair.heldBack.push(new Uint8Array(chunk))
            return
          }
          pair.answered = true
          pair.back.write(chunk)
        },
        drain() {
          pair.pending.flush()
        },
        close() {
          pairs.delete(pair)
          // What the upstream sent before closing still reaches the client.
          whenHeard(() => {
            flushHeld(pair)
            pair.back.end()
          })
        },
        error() {
          whenHeard(() => pair.client.end())
        },
      },
    }).catch(() => pair.client.end())
  }
  const listener: TCPSocketListener<Pair> = Bun.listen<Pair>({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      open(client) {
        if (!open) {
          client.end()
          return
        }
        if (refusingAfterMs !== null) {
          setTimeout(() => client.end(), refusingAfterMs)
          return
        }
        if (replying && replying.left > 0) {
          replying.left--
          answering.set(client, replying.reply)
          return
        }
        const pair: Pair = {
          client,
          upstream: null,
          pending: new WriteQueue(),
          back: new WriteQueue(),
          answered: true,
          heldUp: [],
          heldBack: [],
        }
        pair.back.attach(client)
        client.data = pair
        pairs.add(pair)
        if (silent) unconnected.push(pair)
        else connectUpstream(pair)
      },
      data(client, chunk) {
        const reply = answering.get(client)
        if (reply) {
          answering.delete(client)
          client.end(reply)
          return
        }
        // Refused while cut (no pair): what it sends before it sees the close goes nowhere.
        const pair = client.data
        if (!pair) return
        if (silent) {
          pair.heldUp.push(new Uint8Array(chunk))
          return
        }
        if (pair.answered) turns++
        pair.answered = false
        pair.pending.write(chunk)
      },
      drain(client) {
        client.data?.back.flush()
      },
      close(client) {
        answering.delete(client)
        const pair = client.data
        if (!pair) return
        pairs.delete(pair)
        // Given up by the client while silent: what it sent meanwhile never arrives, and the
        // server learns of the close once the path is back.
        pair.heldUp = []
        if (unconnected.includes(pair)) unconnected = unconnected.filter((other) => other !== pair)
        else whenHeard(() => pair.pending.end()) // also an upstream still connecting, once it opens
      },
    },
  })
  return {
    port: listener.port,
    cut() {
      open = false
      silent = false
      unconnected = []
      closes = []
      for (const pair of pairs) {
        pair.client.terminate()
        pair.upstream?.terminate()
      }
      pairs.clear()
    },
    silence() {
      silent = true
    },
    refuseNew(afterMs: number) {
      refusingAfterMs = afterMs
    },
    replyNew(reply: Uint8Array, count: number) {
      replying = { reply, left: count }
    },
    restore() {
      open = true
      refusingAfterMs = null
      replying = null
      if (!silent) return
      silent = false
      for (const pair of pairs) flushHeld(pair)
      for (const close of closes.splice(0)) close()
      for (const pair of unconnected.splice(0)) connectUpstream(pair)
    },
    stop() {
      this.cut()
      listener.stop(true)
    },
    turns: () => turns,
  }
}
