/**
 * The composition root: builds config-driven parts (storage, clock, logger, routing
 * provider, notifier, limiters), starts the HTTP and SMTP listeners, and stops them in
 * order. Tests call startApp() directly to run several independent servers in one process.
 */
import type { AddressInfo } from 'node:net'
import { availableParallelism } from 'node:os'
import { resolve as resolvePath } from 'node:path'
import { systemClock, type Clock } from './clock.ts'
import { type Config, ConfigError } from './config.ts'
import { CursorCodec } from './core/cursor.ts'
import { ParsePool } from './core/inbound/parse-pool.ts'
import { RefusedDeliveries } from './core/inbound/refused-deliveries.ts'
import { InboundReservations } from './core/inbound/reservations.ts'
import { DiskGuard, parseMinFree } from './core/disk-guard.ts'
import { StorageHealth } from './core/storage-health.ts'
import { writeHeartbeat } from './core/heartbeat.ts'
import { parseLocalWarn, ReplicationMonitor } from './core/replication.ts'
import { discardUnfinishedInboxes } from './core/inboxes/delete-inbox.ts'
import { LongPollSlots } from './core/long-poll-slots.ts'
import { RequestRateLimiter } from './core/request-rate-limiter.ts'
import { startRetentionSweeper } from './core/retention.ts'
import type { Services } from './core/services.ts'
import { badTargetResponse } from './console/bad-target.ts'
import { buildConsole, isConsolePath } from './console/index.ts'
import { setupToken, setupUrl } from './core/console/setup.ts'
import { buildHttpApp } from './http/app.ts'
import { clientAddressReader } from './http/client-address.ts'
import { ConnectionTimeouts } from './web/connection-timeouts.ts'
import { targetRefusal } from './web/request-target.ts'
import { strictTransportSecurity, withStrictTransportSecurity } from './http/transport-security.ts'
import { routableByElysia } from './http/routable-request.ts'
import { createLogger, type Logger } from './log.ts'
import { AppMetrics } from './metrics/app-metrics.ts'
import { sampleEventLoopDelay } from './metrics/event-loop.ts'
import { startPrivateMetricsListener } from './metrics/private-listener.ts'
import { observedLogger } from './metrics/log-observer.ts'
import { meteredRouting } from './metrics/routing.ts'
import { InboxNotifier } from './notifier.ts'
import { createRoutingProvider } from './routing/index.ts'
import type { RoutingProvider } from './core/routing.ts'
import { type PublicUrls, resolvePublicUrls } from './public-urls.ts'
import { createSmtpServer } from './smtp/server.ts'
import { prepareSmtpTls } from './smtp/tls.ts'
import { joinQuietCollection } from './quiet-collection.ts'
import { openStorage } from './storage/database.ts'
import { Spool } from './storage/spool.ts'
import { lockServerDatabase } from './storage/server-lock.ts'

interface AppOptions {
  config: Config
  clock?: Clock
  logger?: Logger
  /** Replaces the provider chosen by EMAIL_ROUTING (tests use a controllable double). */
  routing?: RoutingProvider
}

export interface RunningApp {
  services: Services
  httpPort: number
  smtpPort: number
  /** The METRICS_PORT listener's port, when one runs. */
  metricsPort: number | null
  httpUrl: string
  /** The one-time /setup link while no console user exists (index.ts prints it plainly too). */
  setupUrl: string | null
  /** BASE_URL and FILES_URL, with a default built from PORT=0 naming the port the OS picked. */
  publicUrls: PublicUrls
  /**
   * Graceful stop: listeners stop accepting, SMTP transactions and HTTP requests in flight
   * finish, waiting long polls keep waiting meanwhile and are then cut without an answer,
   * the database closes.
   */
  stop(): Promise<void>
}

/** How long a stop waits for SMTP transactions and HTTP requests in flight (fly.toml's kill_timeout is 30 s). */
const SHUTDOWN_TIMEOUT_MS = 10_000

/** Resolves once every HTTP request in flight is a waiting long poll, or when `giveUp` aborts. */
function onlyWaitsLeft(server: { pendingRequests: number }, waits: () => number, giveUp: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const check = () => (giveUp.aborted || server.pendingRequests <= waits() ? resolve() : setTimeout(check, 20))
    check()
  })
}

const withTimeout = (work: Promise<unknown>, ms: number) => Promise.race([work, new Promise((resolve) => setTimeout(resolve, ms).unref?.())])

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

const explainListenError = (error: unknown, variable: 'PORT' | 'SMTP_PORT', port: number) => ((error as { code?: string })?.code === 'EADDRINUSE' ? new PortInUseError(variable, port) : error)

function listenOrExplain<T>(variable: 'PORT', port: number, listen: () => T, undo: () => void): T {
  try {
    return listen()
  } catch (error) {
    undo()
    throw explainListenError(error, variable, port)
  }
}

/** With a replica: Litestream's metrics listener on the loopback port the entry chose. */
function replicationMonitor(config: Config, storage: ReturnType<typeof openStorage>, logger: Logger): ReplicationMonitor | null {
  if (config.litestreamReplica === 'none') return null
  const { page_size: pageSize } = storage.sqlite.query('PRAGMA page_size').get() as { page_size: number }
  return new ReplicationMonitor({
    databasePath: resolvePath(config.databasePath),
    pageSize,
    metricsUrl: config.litestreamMetricsPort > 0 ? `http://127.0.0.1:${config.litestreamMetricsPort}/metrics` : null,
    maxLagSeconds: config.replicationMaxLagSeconds,
    localWarn: parseLocalWarn(config.litestreamLocalWarn),
    logger,
  })
}

export async function startApp(options: AppOptions): Promise<RunningApp> {
  const { config } = options
  const metrics = new AppMetrics()
  const logger = observedLogger(options.logger ?? createLogger(config.logLevel), metrics)
  // Before anything opens: unreadable certificate files stop the start with nothing to undo.
  const tls = await prepareSmtpTls(config, logger)
  // Before the file opens: a second server on the same file stops here, naming the first.
  const lock = lockServerDatabase(config.databasePath)
  let storage: ReturnType<typeof openStorage>
  try {
    storage = openStorage(config.databasePath)
  } catch (error) {
    lock.release()
    throw error
  }
  // After the lock, so a second server never clears the first one's transfers. Whatever is
  // spooled now was left by a process that died mid-transfer: no 250 was sent for it.
  const spool = Spool.forDatabase(config.databasePath)
  const leftInSpool = spool.clear()
  if (leftInSpool > 0) logger.warn('spool_cleared', { files: leftInSpool })
  const clock = options.clock ?? systemClock
  const stopping = new AbortController()
  const stopped = new AbortController()
  let publicUrls = resolvePublicUrls(config, config.port)
  const services: Services = {
    config,
    publicUrls: () => publicUrls,
    storage,
    clock,
    logger,
    routing: meteredRouting(options.routing ?? createRoutingProvider(config, logger), metrics),
    notifier: new InboxNotifier(),
    cursors: CursorCodec.fromDatabase(storage.db),
    requestLimiter: new RequestRateLimiter(clock),
    longPolls: new LongPollSlots(),
    reservations: new InboundReservations(),
    refusedDeliveries: new RefusedDeliveries(config.receivingDomain),
    parser: new ParsePool({ size: availableParallelism(), timeoutMs: config.parseTimeoutMs, logger }),
    spool,
    metrics,
    disk: new DiskGuard(
      storage,
      config.databasePath,
      parseMinFree(config.diskMinFree)!,
      logger,
      () => services.replication?.localBytes() ?? 0,
      () => spool.bytes,
    ),
    storageHealth: new StorageHealth(logger, (kind) => metrics.storageFailures.inc({ kind })),
    replication: replicationMonitor(config, storage, logger),
    stopping: stopping.signal,
    stopped: stopped.signal,
  }
  const stopReplicationMonitor = services.replication?.start() ?? (() => {})
  storage.observer = services.storageHealth
  // Litestream publishes the replica's position only after it has uploaded something in this
  // run, so on an idle server that has just restarted the lag would grow with nothing to
  // replicate (until the first write). One heartbeat now gives it that upload. A failing
  // volume is logged once by the storage observer; the server starts anyway.
  if (services.replication) storage.writeInGroup((tx) => writeHeartbeat(tx, clock.now())).catch(() => {})
  discardUnfinishedInboxes(services)
  services.disk.start()
  const stopDiskWatch = services.disk.watch()

  let smtpListening = false
  const connections = new ConnectionTimeouts()
  const api = buildHttpApp(services, { smtpListening: () => smtpListening && smtp.server.listening }, connections)
  const consoleApp = buildConsole(services, connections)
  const clientAddress = clientAddressReader(config.clientAddressHeader, config.trustedProxies)
  const hsts = strictTransportSecurity(config)
  const route = (request: Request, peer: () => string): Response | Promise<Response> => {
    // The API checks Host and target itself, first thing, and answers a refusal in its
    // error envelope; the console parses its URL with new URL(), so it is checked here.
    if (!isConsolePath(request.url)) return api.fetch(connections.routedAs(request, routableByElysia(request)))
    const refusal = targetRefusal(request)
    if (refusal) return badTargetResponse(logger, request, refusal)
    return consoleApp.handle(request, clientAddress(request.headers, peer()))
  }
  // One port: the console's paths go to its own router, everything else to the API (whose
  // OpenAPI document therefore never lists them).
  const server = listenOrExplain(
    'PORT',
    config.port,
    () =>
      Bun.serve({
        port: config.port,
        hostname: config.host,
        idleTimeout: config.httpIdleTimeoutSeconds,
        reusePort: false, // Bun's adapter in Elysia defaulted to true, which lets two servers share a port silently
        // Bun would answer an oversized body with a bare 413; we refuse it ourselves with the error
        // envelope, reading at most 64 KiB of any body (src/web/body.ts).
        maxRequestBodySize: 1024 * 1024 * 1024,
        fetch(request, bun) {
          // The peer's address only where it is used (the console), off the API's path.
          const answer = route(request, () => bun.requestIP(request)?.address ?? '')
          return hsts ? withStrictTransportSecurity(answer, hsts) : answer
        },
      }),
    () => {
      stopDiskWatch()
      stopReplicationMonitor()
      storage.close()
      spool.close()
      lock.release()
    },
  )
  connections.attach((request, seconds) => server.timeout(request, seconds), config.httpIdleTimeoutSeconds)
  const httpPort = server.port!
  publicUrls = resolvePublicUrls(config, httpPort)
  logger.info('http_listening', { port: httpPort, host: config.host })
  const pendingSetup = setupToken(storage.db)
  const setupLink = pendingSetup ? setupUrl(publicUrls.baseUrl, pendingSetup) : null
  // The link itself is a secret (it creates the operator): the log says where to get it, the
  // start-up summary on stderr and `cli setup-link` show it.
  if (setupLink) logger.info('console_setup_pending', { setup_path: '/setup', link_from: 'bun src/cli.ts setup-link' })

  const smtp = createSmtpServer(services, tls)
  const stopTlsWatch = tls.watch((material) => smtp.updateSecureContext(material))
  const smtpPort = await new Promise<number>((resolve, reject) => {
    smtp.server.once('error', reject)
    smtp.listen(config.smtpPort, config.host, () => {
      smtp.server.off('error', reject)
      smtpListening = true
      resolve((smtp.server.address() as AddressInfo).port)
    })
  }).catch(async (error) => {
    stopTlsWatch()
    stopDiskWatch()
    stopReplicationMonitor()
    await server.stop(true)
    storage.close()
    spool.close()
    lock.release()
    throw explainListenError(error, 'SMTP_PORT', config.smtpPort)
  })
  lock.announce({ httpPort, smtpPort })
  consoleApp.deps.smtpAddress = `${new URL(publicUrls.baseUrl).hostname}:${smtpPort}`
  logger.info('smtp_listening', { port: smtpPort, host: config.host, receiving_domain: config.receivingDomain })
  const stopSweeper = startRetentionSweeper(services)
  metrics.attach({
    // smtp-server keeps its open connections in a Set its typings do not declare.
    smtpSessions: () => (smtp as unknown as { connections: Set<unknown> }).connections.size,
    longPollsWaiting: () => services.longPolls.total(),
    databasePath: config.databasePath,
    diskFree: services.disk.enabled ? () => services.disk.status() : undefined,
    replication: services.replication ?? undefined,
  })
  const stopLoopSampler = sampleEventLoopDelay(metrics.eventLoopDelay)
  const leaveQuietCollection = joinQuietCollection()
  let privateMetrics: ReturnType<typeof startPrivateMetricsListener> | null = null

  let stopping_: Promise<void> | undefined
  const stop = () =>
    (stopping_ ??= (async () => {
      logger.info('stopping')
      stopSweeper()
      stopTlsWatch()
      stopLoopSampler()
      leaveQuietCollection()
      stopDiskWatch()
      stopReplicationMonitor()
      privateMetrics?.stop(true)
      stopping.abort() // console live streams end now; waiting long polls do not (below)
      // Stop accepting. smtp-server lets a transaction in DATA finish and cuts the rest after
      // its closeTimeout (an unacknowledged message is the sender's to retry); HTTP requests
      // in flight finish. A waiting long poll is NOT answered: mail from those last SMTP
      // transactions may still wake it, and an empty 204 would tell a test "nothing arrived"
      // when the server only went away.
      const httpIdle = server.stop(false)
      const smtpClosed = new Promise<void>((resolve) => smtp.close(() => resolve()))
      const giveUp = new AbortController()
      const waitsOnly = onlyWaitsLeft(server, () => services.longPolls.total(), giveUp.signal)
      await withTimeout(Promise.all([smtpClosed, Promise.race([httpIdle, waitsOnly])]), SHUTDOWN_TIMEOUT_MS)
      giveUp.abort()
      // Then every connection still open, waiting long polls included, is closed without an
      // answer: the client sees a transport error and asks again (the next server, after a deploy).
      const cut = services.longPolls.total()
      await server.stop(true)
      stopped.abort()
      if (cut > 0) logger.info('long_polls_cut', { count: cut })
      services.parser.close()
      storage.close()
      spool.close()
      lock.release()
      logger.info('stopped')
    })())

  if (config.metricsPort !== '') {
    // Its own bind address, never HOST: the API listens everywhere by default, a listener without a token must not.
    try {
      privateMetrics = startPrivateMetricsListener(metrics, Number(config.metricsPort), config.metricsHost)
    } catch (error) {
      // Last to open, so everything else is running: close it all, then say which setting is wrong in one line.
      await stop()
      const inUse = (error as { code?: string })?.code === 'EADDRINUSE'
      throw new ConfigError(inUse ? 'METRICS_PORT' : 'METRICS_HOST', `cannot listen on ${config.metricsHost} port ${config.metricsPort} (${(error as Error).message})`)
    }
    logger.info('metrics_listening', { port: privateMetrics.port, host: config.metricsHost })
  }

  return { services, httpPort, smtpPort, metricsPort: privateMetrics?.port ?? null, httpUrl: `http://127.0.0.1:${httpPort}`, publicUrls, setupUrl: setupLink, stop }
}
