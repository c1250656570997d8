/**
 * A start that fails part-way leaves nothing behind: when step N of start() fails, steps 1
 * to N-1 stop in reverse order and the database is closed and unlocked, so the same file
 * starts cleanly at once. The failures are real (a taken PORT, SMTP_PORT or METRICS_PORT);
 * the order is read from the debug lines the start and stop steps log. startApp() refuses a
 * PORT or SMTP_PORT already taken before any step; the steps' own unwinding covers a port
 * taken after that check, which these tests reach by running assemble() and start() directly.
 */
import { afterAll, expect, setDefaultTimeout, test } from 'bun:test'
import { createServer, type Server } from 'node:net'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { PortInUseError, startApp } from '../../src/app.ts'
import { assemble } from '../../src/app/assemble.ts'
import { start } from '../../src/app/start.ts'
import { ConfigError, loadConfig } from '../../src/config.ts'
import { createLogger } from '../../src/log.ts'
import { scratchDir } from '../support/scratch.ts'
import { layDownSelfSigned } from '../support/tls-seed.ts'

setDefaultTimeout(30_000)

const dir = scratchDir('pigeonhole-start-failures-')
afterAll(() => rmSync(dir, { recursive: true, force: true }))

async function occupiedPort(): Promise<{ port: number; server: Server }> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { port: (server.address() as { port: number }).port, server }
}

/**
 * Starts a server on `databasePath` with `env`, keeping its log lines. `steps`: without
 * startApp's check of the ports first, as when a port is taken between that check and the bind.
 */
async function startLogged(
  databasePath: string,
  env: Record<string, string> = {},
  how: 'startApp' | 'steps' = 'startApp',
) {
  const config = loadConfig({
    PORT: '0',
    SMTP_PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_PATH: databasePath,
    RECEIVING_DOMAIN: 'inbox.test',
    ...env,
  })
  await layDownSelfSigned(databasePath, config.receivingDomain)
  const logs: Array<Record<string, unknown>> = []
  const logger = createLogger('debug', (line) => logs.push(JSON.parse(line)))
  const started = (how === 'steps' ? assemble({ config, logger }).then(start) : startApp({ config, logger })).then(
    (app) => ({ app, error: null }),
    (error: unknown) => ({ app: null, error }),
  )
  const parts = (event: string) => logs.filter((line) => line.event === event).map((line) => line.part as string)
  return { ...(await started), logs, started: () => parts('part_started'), stopped: () => parts('part_stopped') }
}

/** The whole start, from a clean start and stop: every step, in order. */
async function allSteps(): Promise<string[]> {
  const run = await startLogged(join(dir, 'reference.db'), { METRICS_PORT: '0', METRICS_HOST: '127.0.0.1' })
  expect(run.error).toBeNull()
  await run.app!.stop()
  // A stop runs the same list backwards.
  expect(run.stopped()).toEqual(run.started().toReversed())
  return run.started()
}

/** A port that accepts nothing proves its listener closed. */
async function refusesConnections(port: number): Promise<boolean> {
  return fetch(`http://127.0.0.1:${port}/health`).then(
    () => false,
    () => true,
  )
}

/** The same database starts and stops cleanly: the failed start closed it and let go of its lock. */
async function startsAgain(databasePath: string) {
  const again = await startLogged(databasePath)
  expect(again.error).toBeNull()
  expect((await fetch(`${again.app!.httpUrl}/health`)).status).toBe(200)
  await again.app!.stop()
}

test('a clean start runs every step, and its stop runs them backwards', async () => {
  const steps = await allSteps()
  expect(steps).toEqual([
    'replication monitor',
    'disk watch',
    'http',
    'tls watch',
    'smtp',
    'drain',
    'retention sweeper',
    'event-loop sampler',
    'quiet collection',
    'metrics listener',
  ])
})

test.each([
  { variable: 'PORT', failing: 'http' },
  { variable: 'SMTP_PORT', failing: 'smtp' },
  { variable: 'METRICS_PORT', failing: 'metrics listener' },
])(
  'a taken $variable fails its step; the steps before it stop in reverse and the database is free again',
  async ({ variable, failing }) => {
    const steps = await allSteps()
    const busy = await occupiedPort()
    const databasePath = join(dir, `${variable}.db`)
    try {
      const run = await startLogged(
        databasePath,
        {
          [variable]: String(busy.port),
          METRICS_HOST: '127.0.0.1',
          ...(variable === 'METRICS_PORT' ? {} : { METRICS_PORT: '' }),
        },
        'steps',
      )
      expect(run.app).toBeNull()
      if (variable === 'METRICS_PORT') {
        expect(run.error).toBeInstanceOf(ConfigError)
        expect((run.error as ConfigError).message).toContain('METRICS_PORT')
      } else expect(run.error).toEqual(new PortInUseError(variable as 'PORT' | 'SMTP_PORT', busy.port))

      const before = steps.slice(0, steps.indexOf(failing))
      expect(run.started()).toEqual(before)
      expect(run.stopped()).toEqual(before.toReversed())
      expect(run.logs.at(-1)?.event).toBe('stopped')
      // Whatever listened before the failure listens no more.
      const httpListening = run.logs.find((line) => line.event === 'http_listening')
      if (httpListening) expect(await refusesConnections(httpListening.port as number)).toBe(true)
    } finally {
      busy.server.close()
    }
    await startsAgain(databasePath)
  },
)

test.each(['PORT', 'SMTP_PORT', 'METRICS_PORT'])(
  'startApp refuses a %s already taken before any step: nothing starts, nothing is logged',
  async (variable) => {
    const busy = await occupiedPort()
    const databasePath = join(dir, `checked-${variable}.db`)
    try {
      const run = await startLogged(databasePath, { [variable]: String(busy.port), METRICS_HOST: '127.0.0.1' })
      if (variable === 'METRICS_PORT')
        expect(run.error).toEqual(
          new ConfigError('METRICS_PORT', `cannot listen on 127.0.0.1 port ${busy.port}: another process uses it`),
        )
      else expect(run.error).toEqual(new PortInUseError(variable as 'PORT' | 'SMTP_PORT', busy.port))
      expect(run.logs).toEqual([])
    } finally {
      busy.server.close()
    }
    await startsAgain(databasePath)
  },
)
