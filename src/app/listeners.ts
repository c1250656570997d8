/**
 * Binding the listeners, and the words for a bind that fails: a taken PORT or SMTP_PORT is
 * a one-line message naming the variable (checked once before anything starts, and again by
 * the bind), an unusable METRICS_PORT or METRICS_HOST a configuration error. Also the drain a
 * stop waits for.
 */
import { type AddressInfo, createServer } from 'node:net'
import type { Server } from 'bun'
import type { SMTPServer } from 'smtp-server'
import { type Config, ConfigError } from '../config.ts'
import type { AppMetrics } from '../metrics/app-metrics.ts'
import { startPrivateMetricsListener } from '../metrics/private-listener.ts'
import { refuseNewHandshakes } from './handshake-filter.ts'
import { DatabaseInUseError, runningServer } from '../storage/server-lock.ts'

/** A listener could not bind: names the variable that picks its port, for a one-line message. */
export class PortInUseError extends Error {
  constructor(
    readonly variable: 'PORT' | 'SMTP_PORT',
    readonly port: number,
  ) {
    super(`Port ${port} is already in use: stop the other process or choose a free port with ${variable}=<port>.`)
    this.name = 'PortInUseError'
  }
}

/** True unless another socket holds the port (any other failure is left to the real bind to report). */
async function portFree(host: string, port: number): Promise<boolean> {
  const probe = createServer()
  try {
    await new Promise<void>((resolve, reject) => {
      probe.once('error', reject)
      probe.listen({ port, host, exclusive: true }, resolve)
    })
    return true
  } catch (error) {
    return (error as { code?: string })?.code !== 'EADDRINUSE'
  } finally {
    await new Promise((resolve) => probe.close(resolve))
  }
}

/**
 * Run before anything else (no TLS material, no data folder, no database, no log line): a
 * PORT or SMTP_PORT another process holds stops the start with the one line that says what
 * to do. When the holder is another Pigeonhole server on this same SQLite file, its refusal
 * names that server instead, which is the more useful answer (a second `bun run start` in the
 * same folder). A busy METRICS_PORT is the configuration error its bind would give. A port
 * taken between this check and the listener's bind still gets its line, after the start's
 * own log lines.
 */
export async function refuseBusyPorts(config: Config): Promise<void> {
  const ports = [
    ['PORT', config.port],
    ['SMTP_PORT', config.smtpPort],
  ] as const
  for (const [variable, port] of ports) {
    if (port === 0 || (await portFree(config.host, port))) continue
    const holder = config.databaseUrl === '' ? runningServer(config.databasePath) : null
    if (holder && (holder.http_port === port || holder.smtp_port === port))
      throw new DatabaseInUseError(config.databasePath, holder)
    throw new PortInUseError(variable, port)
  }
  const metricsPort = config.metricsPort === '' ? 0 : Number(config.metricsPort)
  if (metricsPort !== 0 && !(await portFree(config.metricsHost, metricsPort))) {
    throw new ConfigError(
      'METRICS_PORT',
      `cannot listen on ${config.metricsHost} port ${metricsPort}: another process uses it`,
    )
  }
}

const explainListenError = (error: unknown, variable: 'PORT' | 'SMTP_PORT', port: number) =>
  (error as { code?: string })?.code === 'EADDRINUSE' ? new PortInUseError(variable, port) : error

export type HttpServer = Server<undefined>
type Answer = (request: Request, peer: () => string) => Response | Promise<Response>

/**
 * Servers whose drain has begun. `stop(false)` only stops accepting: a client (or a proxy such
 * as Fly's) that keeps a connection alive could send request after request on it for as long as
 * the drain lasts, new long polls included, and a patient drain would never end. So from the
 * drain on, every answer says `Connection: close`, and the next request opens a connection,
 * which the proxy gives to a machine that still listens.
 */
const draining = new WeakSet<HttpServer>()

function closingConnection(response: Response): Response {
  try {
    response.headers.set('connection', 'close')
  } catch {
    // Immutable headers (a response passed through as it came): closed by the stop's end instead.
  }
  return response
}

/** An answer decided after the drain began closes its connection (see `draining`). */
function answerClosingWhenDraining(
  server: HttpServer,
  response: Response | Promise<Response>,
): Response | Promise<Response> {
  if (response instanceof Promise)
    return response.then((settled) => (draining.has(server) ? closingConnection(settled) : settled))
  return draining.has(server) ? closingConnection(response) : response
}

function beginDrain(http: HttpServer): Promise<void> {
  draining.add(http)
  return http.stop(false)
}

/** One port for the API and the console; `answer` gets the peer's address lazily (only the console reads it). */
export function listenHttp(config: Config, answer: Answer): HttpServer {
  try {
    return Bun.serve({
      port: config.port,
      hostname: config.host,
      idleTimeout: config.httpIdleTimeoutSeconds,
      reusePort: false, // Bun's adapter in Elysia defaulted to true, which lets two servers share a port silently
      // Bun would answer an oversized body with a bare 413; we refuse it ourselves with the error
      // envelope, reading at most 64 KiB of any body (src/web/body.ts).
      maxRequestBodySize: 1024 * 1024 * 1024,
      fetch: (request, server) =>
        answerClosingWhenDraining(
          server,
          answer(request, () => server.requestIP(request)?.address ?? ''),
        ),
    })
  } catch (error) {
    throw explainListenError(error, 'PORT', config.port)
  }
}

/** Resolves with the bound port once smtp-server listens. */
export function listenSmtp(config: Config, smtp: SMTPServer): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    smtp.server.once('error', reject)
    smtp.listen(config.smtpPort, config.host, () => {
      smtp.server.off('error', reject)
      resolve((smtp.server.address() as AddressInfo).port)
    })
  }).catch((error: unknown) => {
    throw explainListenError(error, 'SMTP_PORT', config.smtpPort)
  })
}

/**
 * Stops accepting; resolves once the transactions in DATA are done (smtp-server cuts the
 * rest after its closeTimeout). A second call, after a drain closed it, resolves at once.
 */
export function closeSmtp(smtp: SMTPServer): Promise<void> {
  if (!smtp.server.listening) return Promise.resolve()
  return new Promise<void>((resolve) => smtp.close(() => resolve()))
}

/** METRICS_PORT's listener on METRICS_HOST; a bind that fails names whichever of the two is wrong. */
export function listenPrivateMetrics(
  config: Config,
  metrics: AppMetrics,
): ReturnType<typeof startPrivateMetricsListener> {
  // Its own bind address, never HOST: the API listens everywhere by default, a listener without a token must not.
  try {
    return startPrivateMetricsListener(metrics, Number(config.metricsPort), config.metricsHost)
  } catch (error) {
    const inUse = (error as { code?: string })?.code === 'EADDRINUSE'
    throw new ConfigError(
      inUse ? 'METRICS_PORT' : 'METRICS_HOST',
      `cannot listen on ${config.metricsHost} port ${config.metricsPort} (${(error as Error).message})`,
    )
  }
}

/** How long a stop waits for SMTP transactions and HTTP requests in flight (fly.toml's kill_timeout is 30 s). */
const SHUTDOWN_TIMEOUT_MS = 10_000

/**
 * PostgreSQL mode: how long a stop lets waiting long polls run to their own answers. The
 * longest wait a client may ask for is 180 s; a little more covers one that began just as the
 * stop did. fly.postgres.toml's kill_timeout covers it with the rest of the stop.
 */
export const LONG_POLL_DRAIN_MS = 185_000

/**
 * The longest a stop goes on accepting, once its listeners complete no new handshakes, while
 * the kernel still holds connections for them: handshakes under way (a round trip; longer
 * only for a client gone silent after its SYN) and backlogs an event loop busy elsewhere left.
 */
const BACKLOG_ACCEPT_MS = 500

/**
 * Closing a listening socket resets every connection still in its kernel backlog: connections
 * whose handshake completed (the client sees them open, and may have sent its request) but
 * that the process has not accepted yet, because the event loop was busy or the signal to
 * stop was handled first. Those would fail unserved, not be refused, so a proxy cannot move
 * them to another machine. So the kernel first stops completing new handshakes on both
 * listeners (src/app/handshake-filter.ts: a new connection is then refused, which a proxy
 * moves); then turns of the event loop with I/O accept what waits, until the kernel holds
 * nothing more (usually after the first turn); all of it is served like any connection
 * accepted before the stop. Where the kernel cannot be told, one turn takes what waits when
 * the stop begins.
 */
async function backlogAccepted(http: HttpServer, smtp: SMTPServer): Promise<void> {
  const smtpPort = (smtp.server.address() as AddressInfo | null)?.port ?? 0
  const filtered = refuseNewHandshakes([http.port ?? 0, smtpPort].filter((port) => port > 0))
  await new Promise((resolve) => setTimeout(resolve, 0))
  const giveUp = performance.now() + BACKLOG_ACCEPT_MS
  while (filtered && filtered.waiting() > 0 && performance.now() < giveUp) await Bun.sleep(5)
}

/** Resolves once every HTTP request in flight is a waiting long poll, or when `giveUp` aborts. */
function onlyWaitsLeft(server: { pendingRequests: number }, waits: () => number, giveUp: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const check = () => (giveUp.aborted || server.pendingRequests <= waits() ? resolve() : setTimeout(check, 20))
    check()
  })
}

const withTimeout = (work: Promise<unknown>, ms: number) =>
  Promise.race([work, new Promise((resolve) => setTimeout(resolve, ms).unref?.())])

/**
 * Both listeners stop accepting. smtp-server lets a transaction in DATA finish and cuts the
 * rest after its closeTimeout (an unacknowledged message is the sender's to retry); HTTP
 * requests in flight finish. A waiting long poll is NOT answered: mail from those last SMTP
 * transactions may still wake it, and an empty 204 would tell a test "nothing arrived" when
 * the server only went away. Resolves when only waiting long polls are left, or after
 * SHUTDOWN_TIMEOUT_MS.
 */
export async function drain(http: HttpServer, smtp: SMTPServer, waitingLongPolls: () => number): Promise<void> {
  await backlogAccepted(http, smtp)
  const httpIdle = beginDrain(http)
  const smtpClosed = closeSmtp(smtp)
  const giveUp = new AbortController()
  const waitsOnly = onlyWaitsLeft(http, waitingLongPolls, giveUp.signal)
  await withTimeout(Promise.all([smtpClosed, Promise.race([httpIdle, waitsOnly])]), SHUTDOWN_TIMEOUT_MS)
  giveUp.abort()
}

/** Resolves once `done()` holds, checking every 50 ms. */
function until(done: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const check = () => (done() ? resolve() : setTimeout(check, 50))
    check()
  })
}

/**
 * PostgreSQL mode's stop, for rolling deploys: other machines take new connections, so this
 * one lets what it holds finish. Both listeners stop accepting; SMTP transactions in DATA
 * finish; waiting long polls run to their own answers (mail stored on any machine still wakes
 * them through LISTEN), within `longPollsMs`. Then `endLiveStreams` ends the console's live
 * views, which have no answer of their own (the browser reconnects, to another machine), and
 * the other requests in flight get SHUTDOWN_TIMEOUT_MS to finish; a poll still waiting then
 * is cut by the HTTP stop, as in SQLite mode.
 */
export async function drainPatiently(
  http: HttpServer,
  smtp: SMTPServer,
  waitingLongPolls: () => number,
  endLiveStreams: () => void,
  longPollsMs = LONG_POLL_DRAIN_MS,
): Promise<void> {
  await backlogAccepted(http, smtp)
  const httpIdle = beginDrain(http)
  const smtpClosed = withTimeout(closeSmtp(smtp), SHUTDOWN_TIMEOUT_MS)
  let gaveUp = false
  // No request in flight at all means nothing waits, whatever a count says.
  await withTimeout(
    until(() => gaveUp || waitingLongPolls() === 0 || http.pendingRequests === 0),
    longPollsMs,
  )
  gaveUp = true
  endLiveStreams()
  // Other requests in flight finish; a poll still waiting now is cut by the HTTP stop that follows.
  const giveUp = new AbortController()
  await withTimeout(
    Promise.all([smtpClosed, Promise.race([httpIdle, onlyWaitsLeft(http, waitingLongPolls, giveUp.signal)])]),
    SHUTDOWN_TIMEOUT_MS,
  )
  giveUp.abort()
}
