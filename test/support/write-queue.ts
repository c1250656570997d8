/**
 * Bytes on their way into one Bun socket, for the tests' relays (tcp-cut.ts, retrying-proxy.ts).
 * A Bun socket's write() takes only what fits in its buffer and returns how much; the rest is
 * the caller's to write again at the socket's drain, in order. The socket may also not be
 * open yet (a relay's outbound connection still connecting). This keeps those bytes, copied,
 * since the memory of a chunk handed to a data handler may be reused after it returns.
 */
import type { Socket } from 'bun'

export class WriteQueue {
  private socket: Socket<any> | null = null
  private readonly queue: Uint8Array[] = []
  private ending = false

  /** The socket is open: what waits goes out first. */
  attach(socket: Socket<any>): void {
    this.socket = socket
    this.flush()
  }

  /** Writes what the socket takes now, behind anything already waiting; keeps the rest. */
  write(chunk: Uint8Array): void {
    this.queue.push(new Uint8Array(chunk))
    this.flush()
  }

  /** For the socket's drain: writes more of what waits; then ends the socket if end() was asked. */
  flush(): void {
    const socket = this.socket
    if (!socket) return
    while (this.queue.length > 0) {
      const head = this.queue[0]!
      const written = Math.max(0, socket.write(head)) // -1 once the socket is closed
      if (written < head.byteLength) {
        this.queue[0] = head.subarray(written)
        return
      }
      this.queue.shift()
    }
    if (this.ending) socket.end()
  }

  /** Ends the socket once everything written has gone out. */
  end(): void {
    this.ending = true
    this.flush()
  }
}
