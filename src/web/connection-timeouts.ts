/**
 * Bun closes an HTTP connection that stays silent for HTTP_IDLE_TIMEOUT_SECONDS. A long poll
 * is silent by design until its wait ends, and a console live stream between two keep-alive
 * lines: each asks for its own time on its own connection, so the limit for every other
 * connection (idle keep-alive sockets above all) can stay short.
 */
type SetTimeout = (request: Request, seconds: number) => void

export class ConnectionTimeouts {
  private setTimeout: SetTimeout | undefined
  private idleSeconds = 0
  private readonly originals = new WeakMap<Request, Request>()

  /** Bun's `server.timeout` and the listener's idle timeout, known once it listens (no request arrives before). */
  attach(setTimeout: SetTimeout, idleSeconds: number): void {
    this.setTimeout = setTimeout
    this.idleSeconds = idleSeconds
  }

  /** `copy` stands for `original` (src/http/routable-request.ts) and has no connection of its own. */
  routedAs(original: Request, copy: Request): Request {
    if (copy !== original) this.originals.set(copy, original)
    return copy
  }

  /** Lets `request`'s connection stay silent for `seconds`; 0 for as long as it is open. */
  holdOpen(request: Request, seconds: number): void {
    this.setTimeout?.(this.originals.get(request) ?? request, seconds)
  }

  /**
   * Back to the listener's idle timeout, once the answer is ready: Bun keeps a request's own
   * time on its connection after the response, so a keep-alive connection that long-polled
   * would otherwise stay open for the poll's time, not the listener's.
   */
  release(request: Request): void {
    this.holdOpen(request, this.idleSeconds)
  }
}
