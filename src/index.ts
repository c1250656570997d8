/** `bun run start`: reads the environment, starts both listeners, stops cleanly on SIGTERM/SIGINT. */
import type { startApp as StartApp } from './app.ts'
import { exitOnConfigError, loadConfigOrExit } from './config.ts'

// The environment is checked before the server's modules load, so a bad value is reported
// in a few milliseconds rather than after a tenth of a second of loading.
const config = loadConfigOrExit()
const [{ PortInUseError, startApp }, { errorFields }, { startupBanner }] = await Promise.all([import('./app.ts'), import('./log.ts'), import('./startup-banner.ts')])

let app: Awaited<ReturnType<typeof StartApp>>
try {
  app = await exitOnConfigError(() => startApp({ config }))
} catch (error) {
  if (!(error instanceof PortInUseError)) throw error
  console.error(error.message)
  process.exit(1)
}
// Besides the JSON log lines: a newcomer reading the terminal should not have to parse JSON.
console.error(startupBanner(app))
const { logger } = app.services
// Last line of defence: every known failure is handled where it happens, but one client's
// bad input must never take the listeners down for everyone else. Log it and keep serving.
process.on('unhandledRejection', (reason) => logger.error('unhandled_rejection', errorFields(reason)))
process.on('uncaughtException', (error) => logger.error('uncaught_exception', errorFields(error)))
let stopping = false
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    if (stopping) return
    stopping = true
    app.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    )
  })
}
