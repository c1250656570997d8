/**
 * The first half of the composition root: builds every part from the config (storage,
 * clock, logger, routing provider, notifier, limiters, the API, the console, the SMTP server)
 * without listening on anything. What it opens is the backend (backend.ts: the SQLite file
 * with its lock, or the migrated PostgreSQL pool with its LISTEN and leases, and whatever
 * else the mode brings) and the spool; close() is its only undo. start.ts then makes the
 * parts run.
 */
import { availableParallelism } from 'node:os'
import { resolve as resolvePath } from 'node:path'
import type { SMTPServer } from 'smtp-server'
import { type Clock, systemClock } from '../clock.ts'
import type { Config } from '../config.ts'
import { badTargetResponse } from '../console/bad-target.ts'
import { buildConsole, isConsolePath } from '../console/index.ts'
import { CursorCodec } from '../core/common/cursor.ts'
import { DiskGuard, parseMinFree } from '../core/runtime/disk-guard.ts'
import { recordHeartbeat } from '../core/runtime/heartbeat.ts'
import { ParsePool } from '../core/inbound/parse-pool.ts'
import { RefusedDeliveries } from '../core/inbound/refused-deliveries.ts'
import { discardUnfinishedInboxes } from '../core/inboxes/delete-inbox.ts'
import { KeyRevocations } from '../core/api-keys/revocations.ts'
import { DownloadSlots } from '../core/attachments/download-slots.ts'
import { parseLocalWarn, ReplicationMonitor } from '../core/runtime/replication.ts'
import type { RoutingProvider } from '../core/common/routing.ts'
import type { Services } from '../core/common/services.ts'
import { STORAGE_FAILURE_KINDS, StorageHealth } from '../core/runtime/storage-health.ts'
import { STORED_BYTES_KINDS } from '../core/common/stored-bytes.ts'
import { RequestRegistry } from '../http/request-registry.ts'
import { buildHttpApp } from '../http/app.ts'
import { clientAddressReader } from '../http/client-address.ts'
import { routableByElysia } from '../http/routable-request.ts'
import { strictTransportSecurity, withStrictTransportSecurity } from '../http/transport-security.ts'
import { createLogger, type Logger } from '../log.ts'
import { AppMetrics } from '../metrics/app-metrics.ts'
import { observedLogger } from '../metrics/log-observer.ts'
import { createRoutingProvider } from '../routing/index.ts'
import { meteredRouting } from '../routing/metered.ts'
import { createSmtpServer } from '../smtp/server.ts'
import { prepareSmtpTls, type SmtpTls } from '../smtp/tls.ts'
import type { Storage } from '../storage/database.ts'
import { Spool } from '../storage/spool.ts'
import { ConnectionTimeouts } from '../web/connection-timeouts.ts'
import { targetRefusal } from '../web/request-target.ts'
import { ListenAddresses } from './addresses.ts'
import { type Backend, dialectOf, openBackend } from './backend.ts'

export interface AppOptions {
  config: Config
  clock?: Clock
  logger?: Logger
  /** Replaces the provider chosen by EMAIL_ROUTING (tests use a controllable double). */
  routing?: RoutingProvider
}

/** Every part built, nothing listening. */
export interface Assembly {
  services: Services
  /** Every metric /metrics exposes (core reports into it through Services.metrics). */
  metrics: AppMetrics
  addresses: ListenAddresses
  tls: SmtpTls
  /**
   * The database and what its mode brings (backend.ts): the store,
   * the SQLite file and lock, or PostgreSQL's coordination.
   */
  backend: Backend<'server'>
  /** Answers every request on PORT: the console's paths and the API. */
  answer(request: Request, peer: () => string): Response | Promise<Response>
  /** The API's and the console's per-connection timeouts, attached once HTTP listens. */
  connections: ConnectionTimeouts
  smtp: SMTPServer
  /** The API's requests in flight; a stop waits for the request lines of those it cut. */
  requests: RequestRegistry
  /** Aborted when a stop begins (console live streams end then; long polls keep waiting). */
  stopping: AbortController
  /** Aborted once every HTTP connection is closed (waiting long polls then end unanswered). */
  stopped: AbortController
  /**
   * Closes what assemble opened: the parse workers, the database
   * (or the pool, its LISTEN and leases), the spool, the lock.
   */
  close(): Promise<void>
}

/** With a replica: Litestream's metrics listener on the loopback port the entry chose. */
function replicationMonitor(config: Config, storage: Storage, logger: Logger): ReplicationMonitor | null {
  if (config.litestreamReplica === 'none') return null
  const { pageSize } = storage.file.pages()
  return new ReplicationMonitor({
    databasePath: resolvePath(config.databasePath),
    pageSize,
    metricsUrl: config.litestreamMetricsPort > 0 ? `http://127.0.0.1:${config.litestreamMetricsPort}/metrics` : null,
    maxLagSeconds: config.replicationMaxLagSeconds,
    localWarn: parseLocalWarn(config.litestreamLocalWarn),
    logger,
  })
}

export async function assemble(options: AppOptions): Promise<Assembly> {
  const { config } = options
  // Series known in advance start at 0; their label values are core's.
  const clock = options.clock ?? systemClock
  const metrics = new AppMetrics(
    { storageFailureKinds: STORAGE_FAILURE_KINDS, storedBytesKinds: STORED_BYTES_KINDS },
    () => clock.now(),
  )
  const logger = observedLogger(options.logger ?? createLogger(config.logLevel), metrics)
  // Before anything opens: unreadable certificate files stop the start with nothing to undo.
  const tls = await prepareSmtpTls(config, logger)
  const storageHealth = new StorageHealth(logger, (kind) => metrics.storageFailures.inc({ kind }), dialectOf(config))
  const backend = await openBackend(config, { use: 'server', clock, logger, health: storageHealth })
  const { store, sqlite, coordination } = backend
  // After the lock, so a second server never clears the first one's transfers. Whatever is
  // spooled now was left by a process that died mid-transfer: no 250 was sent for it. In
  // PostgreSQL mode the spool still lives beside DATABASE_PATH, one per machine.
  const spool = Spool.forDatabase(config.databasePath)
  let parser: ParsePool | undefined
  const close = async () => {
    parser?.close()
    // The spool before the lock goes with the backend: a second server may clear it then.
    spool.close()
    await backend.close()
  }
  try {
    const leftInSpool = spool.clear()
    if (leftInSpool > 0) logger.warn('spool_cleared', { files: leftInSpool })
    const addresses = new ListenAddresses(config)
    const stopping = new AbortController()
    const stopped = new AbortController()
    parser = new ParsePool({ size: availableParallelism(), timeoutMs: config.parseTimeoutMs, logger })
    // One secret in the database: a cursor from one machine works on the next.
    const cursors = await CursorCodec.fromStore(store.inboxes)
    const services: Services = {
      config,
      publicUrls: () => addresses.publicUrls(),
      store,
      clock,
      logger,
      routing: meteredRouting(options.routing ?? createRoutingProvider(config, logger), (call) =>
        metrics.routingCalls.inc(call),
      ),
      notifier: coordination.notifier,
      cursors,
      requestLimiter: coordination.requestLimiter,
      longPolls: coordination.longPolls,
      keyRevocations: new KeyRevocations((publicIds) => store.accounts.revokedAmong(publicIds)),
      downloads: new DownloadSlots(),
      messagePages: coordination.messagePages,
      reservations: coordination.reservations,
      refusedDeliveries: new RefusedDeliveries(config.receivingDomain, coordination.refusals),
      parser,
      spool,
      metrics,
      disk: new DiskGuard(
        // The volume holds no database in PostgreSQL mode (the provider watches its own disk),
        // only the spool, whose own budget bounds it: the guard, which measures SQLite, is off.
        sqlite?.file ?? null,
        config.databasePath,
        parseMinFree(config.diskMinFree)!,
        logger,
        () => services.replication?.localBytes() ?? 0,
        () => spool.bytes,
      ),
      storageHealth,
      replication: sqlite ? replicationMonitor(config, sqlite, logger) : null,
      stopping: stopping.signal,
      stopped: stopped.signal,
    }
    // Litestream publishes the replica's position only after it has uploaded something in this
    // run, so on an idle server that has just restarted the lag would grow with nothing to
    // replicate (until the first write). One heartbeat now gives it that upload. A failing
    // volume is logged once by the storage observer; the server starts anyway.
    if (services.replication) recordHeartbeat(services).catch(() => {})
    // Only rows older than any running creation, so it is safe with several machines too.
    await discardUnfinishedInboxes(services)
    services.disk.start()

    const smtp = createSmtpServer(services, metrics, tls)
    const connections = new ConnectionTimeouts()
    const probes = {
      smtpListening: () => smtp.server.listening,
      proxyLines: () => smtp.proxyLineReadiness(),
      ...coordination.readiness,
    }
    const requests = new RequestRegistry()
    const api = buildHttpApp(services, probes, connections, metrics, requests)
    const consoleApp = buildConsole(services, connections, () => addresses.smtpAddress(), coordination.console)
    const clientAddress = clientAddressReader(config.clientAddressHeader, config.trustedProxies)
    const hsts = strictTransportSecurity(config)
    // One port: the console's paths go to its own router, everything else to the API (whose
    // OpenAPI document therefore never lists them).
    const route = (request: Request, peer: () => string): Response | Promise<Response> => {
      // The API checks Host and target itself, first thing, and answers a refusal in its
      // error envelope; the console parses its URL with new URL(), so it is checked here.
      if (!isConsolePath(request.url)) return api.fetch(connections.routedAs(request, routableByElysia(request)))
      const refusal = targetRefusal(request)
      if (refusal) return badTargetResponse(logger, request, refusal)
      // The peer's address only where it is used (the console), off the API's path.
      return consoleApp.handle(request, clientAddress(request.headers, peer()))
    }
    const answer = hsts
      ? (request: Request, peer: () => string) => withStrictTransportSecurity(route(request, peer), hsts)
      : route
    return { services, metrics, addresses, tls, backend, answer, connections, smtp, requests, stopping, stopped, close }
  } catch (error) {
    await close()
    throw error
  }
}
