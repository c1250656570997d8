/**
 * The second half of the composition root: makes an assembly run. Each step that sets
 * something running records how to stop it on a StopList; a stop runs the list backwards,
 * and so does a step that fails, so a failed start leaves nothing running and the database
 * closed and unlocked. The order is the order of dependence: watchers, HTTP, SMTP, the drain
 * of both, then what only a fully started server needs (the sweeper, samplers, METRICS_PORT).
 */
import { setupToken, setupUrl } from '../core/users/setup.ts'
import type { Services } from '../core/common/services.ts'
import type { Storage } from '../storage/database.ts'
import type { AppMetrics } from '../metrics/app-metrics.ts'
import { sampleEventLoopDelay } from '../metrics/event-loop.ts'
import type { PublicUrls } from '../public-urls.ts'
import { joinQuietCollection } from '../quiet-collection.ts'
import type { Assembly } from './assemble.ts'
import { closeSmtp, drain, drainPatiently, listenHttp, listenPrivateMetrics, listenSmtp } from './listeners.ts'
import { StopList } from './stop-list.ts'

/** How long a stop waits for the request lines of the requests it cut. */
const REQUEST_LINES_WAIT_MS = 2_000

export interface RunningApp {
  services: Services
  /** The SQLite file, for SQLite's own mechanisms and for tests; null in PostgreSQL mode. */
  storage: Storage | null
  /** Every metric /metrics exposes (core reports into it through Services.metrics). */
  metrics: AppMetrics
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
   * finish, waiting long polls keep waiting meanwhile and are then cut without an answer
   * (PostgreSQL mode: answered in their own time, up to 185 s), the database closes.
   */
  stop(): Promise<void>
}

export async function start(assembly: Assembly): Promise<RunningApp> {
  const { services, metrics, addresses, smtp } = assembly
  const { config, logger } = services
  const parts = new StopList(logger)
  const stopAll = async () => {
    logger.info('stopping')
    await parts.stopAll()
    await assembly.close()
    logger.info('stopped')
  }
  try {
    parts.started('replication monitor', services.replication?.start() ?? (() => {}))
    parts.started('disk watch', services.disk.watch())

    const http = listenHttp(config, assembly.answer)
    parts.started('http', async () => {
      // Every connection still open, waiting long polls included, is closed without an
      // answer: the client sees a transport error and asks again (the next server, after a deploy).
      const cut = services.longPolls.total()
      await http.stop(true)
      assembly.stopped.abort()
      if (cut > 0) logger.info('long_polls_cut', { count: cut })
      // The cut polls write their request lines (connection_closed) a moment later: a
      // process that exits right after the stop must not lose them.
      await Promise.race([assembly.requests.allLogged(), Bun.sleep(REQUEST_LINES_WAIT_MS)])
    })
    assembly.connections.attach((request, seconds) => http.timeout(request, seconds), config.httpIdleTimeoutSeconds)
    const httpPort = http.port!
    addresses.httpListening(httpPort)
    logger.info('http_listening', { port: httpPort, host: config.host })
    const pendingSetup = await setupToken(services)
    const setupLink = pendingSetup ? setupUrl(addresses.publicUrls().baseUrl, pendingSetup) : null
    // The link itself is a secret (it creates the operator): the log says where to get it, the
    // start-up summary on stderr and `cli setup-link` show it.
    if (setupLink)
      logger.info('console_setup_pending', { setup_path: '/setup', link_from: 'bun src/cli.ts setup-link' })

    parts.started(
      'tls watch',
      assembly.tls.watch((material) => smtp.updateSecureContext(material)),
    )
    const smtpPort = await listenSmtp(config, smtp)
    parts.started('smtp', () => closeSmtp(smtp))
    addresses.smtpListening(smtpPort)
    assembly.backend.lock?.announce({ httpPort, smtpPort })
    logger.info('smtp_listening', { port: smtpPort, host: config.host, receiving_domain: config.receivingDomain })
    // Stopped before the listeners' own stops above. One machine (SQLite): console live
    // streams end at once, the rest drains, waiting long polls are cut (the next server
    // answers their retry). Several machines (PostgreSQL): the others serve meanwhile, so
    // long polls run to their own answers first (docs/scaling.md, "Stopping a machine").
    const { coordination } = assembly.backend
    parts.started('drain', () => {
      if (coordination.patientDrain)
        return drainPatiently(
          http,
          smtp,
          () => services.longPolls.total(),
          () => assembly.stopping.abort(),
        )
      assembly.stopping.abort()
      return drain(http, smtp, () => services.longPolls.total())
    })

    // Several machines: each one's timer fires, one of them sweeps (an advisory lock).
    parts.started('retention sweeper', coordination.startSweeper(services))
    if (coordination.watchDatabase) parts.started('database probe', coordination.watchDatabase())
    metrics.attach({
      // smtp-server keeps its open connections in a Set its typings do not declare.
      smtpSessions: () => (smtp as unknown as { connections: Set<unknown> }).connections.size,
      longPollsWaiting: () => services.longPolls.total(),
      databasePath: config.databasePath,
      diskFree: services.disk.enabled ? () => services.disk.status() : undefined,
      replication: services.replication ?? undefined,
      databaseClockOffsetMs: coordination.clockOffsetMs,
    })
    parts.started('event-loop sampler', sampleEventLoopDelay(metrics.eventLoopDelay))
    parts.started('quiet collection', joinQuietCollection())

    let metricsPort: number | null = null
    if (config.metricsPort !== '') {
      const privateMetrics = listenPrivateMetrics(config, metrics)
      parts.started('metrics listener', () => privateMetrics.stop(true))
      metricsPort = privateMetrics.port ?? null
      logger.info('metrics_listening', { port: metricsPort, host: config.metricsHost })
    }

    let stopping: Promise<void> | undefined
    const stop = () => (stopping ??= stopAll())
    return {
      services,
      storage: assembly.backend.sqlite,
      metrics,
      httpPort,
      smtpPort,
      metricsPort,
      httpUrl: `http://127.0.0.1:${httpPort}`,
      publicUrls: addresses.publicUrls(),
      setupUrl: setupLink,
      stop,
    }
  } catch (error) {
    await stopAll()
    throw error
  }
}
